import { nextRequestId } from './request-id.js'
import { afterResponses, responseInFlight } from './pending.js'
import type { IncomingMessage } from 'node:http'
import type { Duplex } from 'node:stream'

/** Parser errors with their own answer; every other one is 400 BAD_REQUEST. */
const ANSWERS: Record<string, [status: number, reason: string, code: string, message: string]> = {
  HPE_HEADER_OVERFLOW: [431, 'Request Header Fields Too Large', 'HEADERS_TOO_LARGE', 'request headers larger than 16 KiB (a long URL counts)'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'Request Timeout', 'REQUEST_TIMEOUT', 'the request was not complete in time'],
}
const MALFORMED: [number, string, string, string] = [400, 'Bad Request', 'BAD_REQUEST', 'malformed HTTP request']
/**
 * A refused connection is cut this long after the refusal at the latest: the answers before it,
 * and the refusal itself, wait for a client that reads them. One that pipelined requests and
 * never reads (its last one cut short at a read's end, then refused by the headers' time-out)
 * would otherwise hold those answers, megabytes of them, and its descriptor for good.
 */
const REFUSED_DRAIN_MS = 30_000

/**
 * A request Node's parser refused before any handler saw it (a URL past the header limit,
 * conflicting Content-Length headers, bytes that are not HTTP). Node would answer with an empty
 * body; this answers the contract's `{error, code}` JSON with an X-Request-Id, logs the request
 * id, and closes the connection, whose remaining bytes cannot be trusted. Requests that came
 * whole before the refused one (pipelined, or the rest of a body longer than its Content-Length)
 * are answered first: they have run, and a client told only "400" would take them as failed.
 */
export function serverOnClientError(err: NodeJS.ErrnoException, socket: Duplex, log: (entry: Record<string, unknown>) => void): void {
  // Node's parser stays in error: more bytes from the client raise this again, once answered.
  if (refused.has(socket)) return
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy()
    return
  }
  refused.add(socket)
  cutLater(socket)
  // A connection the client ended mid-request is the client gone, not a refusal of ours: nothing
  // is written for the request cut short (the access log gives it 499), and no refusal is logged.
  // Requests that came whole before it are still answered: a half-closed client may read them.
  if (err.code === 'HPE_INVALID_EOF_STATE') {
    afterCompleteRequests(socket, () => socket.destroy())
    return
  }
  const [status, reason, code, message] = ANSWERS[err.code ?? ''] ?? MALFORMED
  cutShort.set(socket, status)
  // Requests that came whole are answered first, in order; the first request that did not come
  // whole is the one refused: its answer, once begun, can only be cut.
  afterCompleteRequests(socket, () => {
    if (!socket.writable) return
    if (responseInFlight(socket)?.headersSent) {
      socket.destroy()
      return
    }
    const id = closeWith(socket, status, reason, code, message)
    log({ event: 'http.client_error', id, status, error: err.code ?? err.message })
  })
}

/**
 * Call `then` once the responses to requests that came whole are done (Node gives the socket to
 * each queued answer when the one before finishes, before that one's close); the response left,
 * if any, is the one to the request that did not come whole.
 */
function afterCompleteRequests(socket: Duplex, then: () => void): void {
  const inFlight = responseInFlight(socket)
  if (socket.writable && inFlight?.req.complete) inFlight.once('close', () => afterCompleteRequests(socket, then))
  else then()
}

/**
 * CONNECT asks for a tunnel, which this server is not: Node hands it to a `connect` listener and,
 * without one, closed the socket without a word. It gets a 400 in the contract's body.
 */
export function serverOnConnect(req: IncomingMessage, socket: Duplex, log: (entry: Record<string, unknown>) => void): void {
  socket.on('error', () => socket.destroy())
  refused.add(socket)
  afterResponses(socket, () => {
    if (!socket.writable) return
    const id = closeWith(socket, 400, 'Bad Request', 'BAD_REQUEST', 'CONNECT is not served: this is no proxy')
    // The target without its query: a terminal ticket sent this way is not spent, and not logged either.
    const target = req.url ?? ''
    const query = target.indexOf('?')
    log({ event: 'http.client_error', id, status: 400, error: `CONNECT ${query < 0 ? target : `${target.slice(0, query)}?…`}`.slice(0, 200) })
  })
}

/**
 * The status of the refusal that ended the connection, if one did: the access log's status of a
 * request it cut short (the 408 of a body that never came), rather than "the client went away".
 */
export function refusalStatus(socket: Duplex | null): number | undefined {
  return socket ? cutShort.get(socket) : undefined
}

/** Destroy a refused socket that has not closed within REFUSED_DRAIN_MS. */
export function cutLater(socket: Duplex): void {
  const cut = setTimeout(() => socket.destroy(), REFUSED_DRAIN_MS).unref()
  socket.once('close', () => clearTimeout(cut))
}

/** Write a JSON error answer on the bare socket and close it; returns the answer's request id. */
function closeWith(socket: Duplex, status: number, reason: string, code: string, message: string): string {
  const body = JSON.stringify({ error: message, code })
  const id = nextRequestId()
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
      `x-request-id: ${id}\r\nx-content-type-options: nosniff\r\nvary: Origin\r\nconnection: close\r\n\r\n${body}`,
  )
  return id
}

/** Sockets refused: answered, or waiting for the responses before the refusal. */
const refused = new WeakSet<Duplex>()
/** The status of the refusal that cut a connection's last request short. */
const cutShort = new WeakMap<Duplex, number>()
