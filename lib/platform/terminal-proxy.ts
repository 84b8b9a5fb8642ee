import type http from 'node:http'
import net from 'node:net'
import type { Duplex } from 'node:stream'
import type { PlatformConfig } from '../config.js'
import { CLIENT_CLOSED, logRequest } from '../http/access-log.js'
import { clientAddress } from '../http/client-address.js'
import { afterResponses } from '../http/pending.js'
import { refuseUpgrade } from '../http/refuse-upgrade.js'
import { reinject } from '../http/reinject.js'
import { nextRequestId } from '../http/request-id.js'
import { pathnameOf } from '../http/target.js'

/** The public prefix the bridge is reached under (spec terminal-bridge §1). */
const PREFIX = '/terminal-ws/'
/** The bridge's status line comes within this many bytes (ws's is 34); more is not the bridge. */
const MAX_STATUS_LINE = 1024
/** At the platform's stop, forwarded connections still open after this long are cut. */
const TUNNEL_GRACE_MS = 1_000
/** Headers not forwarded: the bridge needs no session, nor any credential but its ticket. */
const PRIVATE_HEADERS = new Set(['cookie', 'authorization'])
/** A bridge that does not answer the connect within this long counts as down. */
const CONNECT_TIMEOUT_MS = 5_000
/** After one side has closed, the other gets this long to close its end before it is cut. */
const CLOSE_GRACE_MS = 5_000

/**
 * Forward `/terminal-ws/*` upgrades to the bridge at TERMINAL_HOST:TERMINAL_PORT with the prefix
 * stripped, as the reverse proxy does in production (CONTRACT §1), so `npm start` serves the whole
 * product on one origin. The request goes on as it came (Origin included: the bridge checks it),
 * less its cookies and Authorization; then the two sockets are piped. 502 when the bridge is
 * down. An upgrade to any other path is served as the plain request it also is.
 */
export function attachTerminalProxy(server: http.Server, config: Readonly<PlatformConfig>): TerminalProxy {
  /** Both sockets of every forwarded connection, until each closes; set stopping at close(). */
  const state: Tunnels = { open: new Set<Duplex>(), stopping: false }
  server.on('upgrade', (req: http.IncomingMessage, socket: Duplex, head: Buffer) => {
    // Node has taken its own error listener off the socket: a reset would otherwise end the process.
    const socketOnError = (): void => {
      socket.destroy()
    }
    socket.on('error', socketOnError)
    // Requests pipelined before this one are answered first: nothing may pass their answers.
    afterResponses(socket, () => {
      if (!socket.writable) return socket.destroy()
      // An answer before it armed the keep-alive time-out: a WebSocket has none, and a request read
      // anew gets the new connection's own (headers, request).
      if ('setTimeout' in socket) (socket as net.Socket).setTimeout(0)
      const target = req.url ?? '/'
      if (target.startsWith(PREFIX)) {
        // Bytes read before the bridge's socket connects wait in the socket (pipe() takes them).
        socket.pause()
        readAgain(socket)
        return forward(req, socket, head, config, state)
      }
      socket.off('error', socketOnError)
      reinject(server, req, socket, head)
    })
  })
  return {
    async close() {
      state.stopping = true
      // Each side's close event comes a turn after its destroy: waited for, the log lines are written.
      const closed = [...state.open].map((side) => new Promise((resolve) => side.once('close', resolve)))
      const cut = setTimeout(() => {
        for (const side of state.open) side.destroy()
      }, TUNNEL_GRACE_MS)
      await Promise.all(closed)
      clearTimeout(cut)
    },
  }
}

interface Tunnels {
  readonly open: Set<Duplex>
  stopping: boolean
}

/** The platform's forwarding of `/terminal-ws/` upgrades, as its stop needs it. */
interface TerminalProxy {
  /**
   * Cut every forwarded connection TUNNEL_GRACE_MS from now (at SIGTERM): a terminal is no request
   * to finish, and a tunnel whose client reads nothing would otherwise hold the stop for its whole
   * grace. Meanwhile a bridge stopping too (npm start) closes its own with 1001, which passes; after,
   * the bridge ends each shell as for a client gone. Resolves once every one is closed and logged.
   */
  close(): Promise<void>
}

/**
 * Forward the upgrade to the bridge and pipe the two sockets. The bridge's answer gets the
 * request's `X-Request-Id` after its status line, and the connection one access-log line when it
 * closes, as nginx logs a WebSocket: the bridge's status (101 for a terminal) and the whole
 * connection's time; 502 when the bridge is down or closed without answering, 499 when the
 * client left first.
 */
function forward(req: http.IncomingMessage, socket: Duplex, head: Buffer, config: Readonly<PlatformConfig>, tunnels: Tunnels): void {
  const target = req.url ?? '/'
  const logged = {
    started: performance.now(),
    requestId: nextRequestId(),
    method: req.method ?? 'GET',
    // Without the query: the ticket stays out of the log.
    pathname: pathnameOf(target) ?? '',
    ip: clientAddress(req, config.trustProxy).ip,
    log: undefined,
  }
  if (tunnels.stopping) {
    // Read after the stop began (its socket accepted before): no new terminal through here. Logged
    // now: the process may end before this socket's close event.
    refuseUpgrade(socket, 503, 'the platform is shutting down', { requestId: logged.requestId })
    return logRequest(logged, 503)
  }
  let status: number | null = null
  socket.once('close', () => logRequest(logged, status ?? CLIENT_CLOSED))
  const upstream = net.connect({ host: config.terminalHost, port: config.terminalPort })
  for (const side of [socket, upstream]) {
    tunnels.open.add(side)
    side.once('close', () => tunnels.open.delete(side))
  }
  upstream.setTimeout(CONNECT_TIMEOUT_MS, () => upstream.destroy(new Error('connect timeout')))
  const unavailable = (): void => {
    if (status !== null || !socket.writable) return
    status = 502
    refuseUpgrade(socket, 502, 'terminal bridge unavailable', { requestId: logged.requestId })
  }
  // Closed without an answer (or with one that is not the bridge's): 502 to a client still there.
  upstream.once('close', unavailable)
  // Any error (the bridge down, a reset) closes upstream: the listener above answers, or the pipe ends.
  upstream.on('error', () => undefined)
  upstream.once('connect', () => {
    upstream.setTimeout(0)
    upstream.setNoDelay(true)
    if ('setNoDelay' in socket) (socket as net.Socket).setNoDelay(true)
    // In the client's HTTP version: the bridge, not the tunnel, refuses an HTTP/1.0 upgrade.
    const lines = [`${req.method} ${target.slice(PREFIX.length - 1)} HTTP/${req.httpVersion}`]
    for (let i = 0; i < req.rawHeaders.length; i += 2) {
      // The developers' sealed cookies, and any credential a client sends, stay out of its memory.
      if (!PRIVATE_HEADERS.has(req.rawHeaders[i]!.toLowerCase())) lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`)
    }
    upstream.write(lines.join('\r\n') + '\r\n\r\n')
    if (head.length > 0) upstream.write(head)
    socket.pipe(upstream)
    let answer: Buffer = Buffer.alloc(0)
    const statusLine = (chunk: Buffer): void => {
      answer = answer.length === 0 ? chunk : Buffer.concat([answer, chunk])
      const end = answer.indexOf('\r\n')
      if (end < 0 || end > MAX_STATUS_LINE) {
        if (answer.length > MAX_STATUS_LINE) upstream.destroy()
        return
      }
      upstream.off('data', statusLine)
      const code = /^HTTP\/1\.1 ([1-5][0-9][0-9]) /.exec(answer.toString('latin1', 0, end))
      if (!code) return void upstream.destroy()
      status = Number(code[1])
      socket.write(Buffer.concat([answer.subarray(0, end + 2), Buffer.from(`X-Request-Id: ${logged.requestId}\r\n`), answer.subarray(end + 2)]))
      upstream.pipe(socket as net.Socket)
    }
    upstream.on('data', statusLine)
    endAfterClose(upstream, socket)
    endAfterClose(socket, upstream)
  })
}

/**
 * Node's HTTP server stops reading a socket whose pipelined answers back up, and starts it again
 * when they drain, but not once the socket is upgraded: then nothing read it any more (the
 * terminal got no input, and its close went unnoticed). Start it as net.Socket itself does.
 */
function readAgain(socket: Duplex): void {
  const handle = (socket as { _handle?: { reading?: boolean; readStart?: () => number } })._handle
  if (!handle || handle.reading !== false || typeof handle.readStart !== 'function') return
  handle.reading = true
  if (handle.readStart() !== 0) socket.destroy()
}

/**
 * When one side has closed, even by a reset, end the other after what is still queued for it
 * and drain what it sends until it closes too. Destroying it at once can reset a client that is
 * still sending, before it has read the bridge's close frame: a frame over 1 MiB got 1006, not 1009.
 */
function endAfterClose(closed: Duplex, other: Duplex): void {
  // After pipe()'s own close listener, which unpipes `other` from `closed`.
  closed.once('close', () => {
    other.end()
    other.resume()
    const cut = setTimeout(() => other.destroy(), CLOSE_GRACE_MS).unref()
    other.once('close', () => clearTimeout(cut))
  })
}
