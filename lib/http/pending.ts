import { setMaxListeners } from 'node:events'
import type { ServerResponse } from 'node:http'
import type { Duplex } from 'node:stream'

type SocketWithResponse = Duplex & { _httpMessage?: ServerResponse | null }

/** The response Node has given the connection's socket now (the first of its pipelined ones), if any. */
export function responseInFlight(socket: Duplex): ServerResponse | null {
  return (socket as SocketWithResponse)._httpMessage ?? null
}

/**
 * Call `then` when every response Node has for this connection is out: the one on the socket and
 * the pipelined ones queued behind it, which Node gives the socket one by one as each finishes
 * (before the finished one's `close`, which is why that is the event waited for). The connection's
 * next bytes (a refusal, a request read anew) must not pass them: answers queued behind a finished
 * one were written after the socket's end and lost.
 */
export function afterResponses(socket: Duplex, then: () => void): void {
  const inFlight = responseInFlight(socket)
  if (!inFlight) return then()
  inFlight.once('close', () => afterResponses(socket, then))
}

const closedSignals = new WeakMap<Duplex, AbortSignal>()

/**
 * A signal aborted once the connection closes: work a request on it has not begun (a password
 * hash waiting for its turn) can then be skipped, as no one is left to answer. One per connection,
 * shared by its requests, so pipelined ones add no listeners.
 */
export function connectionClosed(socket: Duplex): AbortSignal {
  let signal = closedSignals.get(socket)
  if (signal === undefined) {
    const closed = new AbortController()
    // Each request of the connection waiting for its turn listens: at most 32 (server.ts).
    setMaxListeners(0, closed.signal)
    if (socket.destroyed) closed.abort()
    else socket.once('close', () => closed.abort())
    closedSignals.set(socket, (signal = closed.signal))
  }
  return signal
}
