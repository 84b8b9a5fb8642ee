import http, { type IncomingMessage } from 'node:http'
import type { Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import { WebSocketServer, type WebSocket } from 'ws'
import type { BridgeConfig } from '../config.js'
import { serverOnClientError, serverOnConnect } from '../http/client-error.js'
import { SLOW_CLIENT_LIMITS } from '../http/slow-clients.js'
import { refuseUpgrade } from '../http/refuse-upgrade.js'
import { reinject } from '../http/reinject.js'
import { parseTarget } from '../http/target.js'
import { isAccessChangedCredential, SpentTickets, TICKET_TTL_MS, verifyTicket } from '../ticket.js'
import { startAccessChecks } from './access-check.js'
import type { ShellAccount } from './account.js'
import type { Containment } from './containment.js'
import { serveConnection, sessionLine } from './connection.js'
import { Registry } from './registry.js'
import { startHeartbeat } from './heartbeat.js'

/** Frames above 1 MiB close the connection with 1009 (CONTRACT §6). */
const MAX_PAYLOAD = 1024 * 1024
/** RFC 6455 1013 "Try Again Later": the spec asks for it when the connection limit is reached. */
const CLOSE_TRY_AGAIN = 1013
/** RFC 6455 1008 "Policy Violation": the platform says the user's access has ended (a logout, a role revoked). */
const CLOSE_POLICY = 1008
/** RFC 6455 1001 "Going Away": the bridge is shutting down. */
const CLOSE_GOING_AWAY = 1001
/** A client gets this long to answer a close (at SIGTERM, after a protocol error) before its socket is cut. */
const CLOSE_HANDSHAKE_MS = 1_000

/** The running bridge: its HTTP server, and a shutdown that ends every connection and shell. */
interface Bridge {
  server: http.Server
  shutdown(): Promise<void>
}

interface BridgeOptions {
  config: Readonly<BridgeConfig>
  account: ShellAccount
  /** TERMINAL_TICKET_SECRET keys (the first signs on the platform; all verify here). */
  ticketKeys: string[]
  log: (entry: Record<string, unknown>) => void
  /** The `terminal.session` lines, written with exactly their fields (logExactLine). */
  sessionLog: (entry: Record<string, unknown>) => void
  /** A cgroup per terminal (containment.ts), or null to end terminals by their session alone. */
  containment?: Containment | null
}

/**
 * Where the platform tells the bridge that access changed (a logout, a role taken back), so that
 * the open terminals are checked now rather than at their next interval: POST with the platform's
 * credential (ticket.ts), 202.
 */
const ACCESS_CHANGED = '/access-changed'

/** The health server's error bodies by status. */
const ERRORS: Record<number, [error: string, code: string]> = {
  400: ['the request target is not a valid URL', 'BAD_REQUEST'],
  403: ['the platform\'s credential is required', 'FORBIDDEN'],
  404: ['not found', 'NOT_FOUND'],
  405: ['method not allowed', 'METHOD_NOT_ALLOWED'],
}

/** Build the bridge: health at GET /, the terminal WebSocket at /ws (spec terminal-bridge §4). */
export function createBridge({ config, account, ticketKeys, log, sessionLog, containment = null }: BridgeOptions): Bridge {
  const registry = new Registry(account, config.shell, containment)
  const spent = new SpentTickets()
  const origins = new Set(config.origins)
  const connections = new Map<WebSocket, Promise<void>>()
  /** Upgrades waiting for the platform's answer before they open. */
  const admitting = new Set<Promise<void>>()
  /** Connections refused after their upgrade (the limit, a shutdown), until their close is done. */
  const refused = new Set<Promise<void>>()
  let stopping = false
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_PAYLOAD, perMessageDeflate: false, clientTracking: false })
  // What ws itself refuses once the ticket and origin have passed (a method other than GET, a
  // missing or bad Upgrade, Sec-WebSocket-Key or -Version header) goes through the same `deny` as
  // every other refusal, so it is logged too. ws emits this during handleUpgrade, at once.
  const denials = new WeakMap<IncomingMessage, (status: number, reason: string, headers?: Record<string, string>) => void>()
  wss.on('wsClientError', (err: Error, socket: Duplex, req: IncomingMessage) => {
    const deny = denials.get(req)
    if (!deny) return socket.destroy()
    const method = err.message === 'Invalid HTTP method'
    const version = err.message.includes('Sec-WebSocket-Version')
    deny(method ? 405 : 400, err.message, method ? { Allow: 'GET' } : version ? { 'Sec-WebSocket-Version': '13, 8' } : undefined)
  })

  // The platform's limits on slow clients: it forwards /terminal-ws/ as a tunnel, with none of its own.
  const server = http.createServer({ ...SLOW_CLIENT_LIMITS, requireHostHeader: false }, (req, res) => {
    // No request here has a body worth reading; what comes is read and dropped, so the connection stays usable.
    req.resume()
    // A target no URL can be made of (`//[/`, which a proxy passes on as it came) is a 400, not a throw.
    const path = parseTarget(req.url ?? '/')?.pathname
    const health = path === '/' && (req.method === 'GET' || req.method === 'HEAD')
    const notice = path === ACCESS_CHANGED && req.method === 'POST'
    const bearer = /^Bearer ([A-Za-z0-9_-]{1,100})$/.exec(req.headers.authorization ?? '')?.[1]
    // RFC 9112 §3.2: HTTP/1.1 requires Host; Node's own 400 for it has no body and no nosniff.
    const hostless = req.headers.host === undefined && req.httpVersionMinor >= 1
    const status = hostless ? 400 : health ? 200 : notice ? (bearer !== undefined && isAccessChangedCredential(ticketKeys, bearer) ? 202 : 403)
      : path === undefined ? 400 : path === '/' || path === ACCESS_CHANGED ? 405 : 404
    if (status === 202) access.recheck()
    const body = status === 200
      ? { status: 'ok', connections: connections.size, max: config.maxConn, uptime: Math.floor(process.uptime()) }
      : status === 202 ? { success: true }
      : { error: hostless ? 'the Host header is missing' : ERRORS[status]![0], code: ERRORS[status]![1] }
    const text = JSON.stringify(body)
    // As Node's own answer to it did: a client that sends no Host is not one to keep talking to.
    if (hostless) res.shouldKeepAlive = false
    const allow = status === 405 ? { allow: path === '/' ? 'GET, HEAD' : 'POST' } : {}
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), 'cache-control': 'no-store', 'x-content-type-options': 'nosniff', ...allow })
    res.end(req.method === 'HEAD' ? undefined : text)
  })

  // A request Node's parser refuses (bytes that are not HTTP, a NUL in a header) never reaches
  // the upgrade's checks, so it spends no ticket: it gets the platform's JSON 400, nosniff, logged.
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => serverOnClientError(err, socket, log))
  // CONNECT, which Node would answer by closing the connection without a word: the platform's 400.
  server.on('connect', (req: IncomingMessage, socket: Duplex) => serverOnConnect(req, socket, log))
  const heartbeat = startHeartbeat(server, connections)
  const access = startAccessChecks({
    url: config.platformUrl,
    intervalMs: config.accessCheckMs,
    keys: ticketKeys,
    log,
    ended(ws, reason) {
      ws.close(CLOSE_POLICY, `access ended: ${reason}`)
      setTimeout(() => ws.terminate(), CLOSE_HANDSHAKE_MS).unref()
    },
  })

  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => socket.destroy())
    // Every refusal is logged, for an operator to see forged tickets and foreign origins; never the ticket.
    const deny = (status: number, reason: string, user?: string, headers?: Record<string, string>): void => {
      const origin = req.headers.origin === undefined ? null : req.headers.origin.slice(0, 200)
      log({ event: 'terminal.refused', status, reason, ...(user === undefined ? {} : { user }), origin })
      refuseUpgrade(socket, status, reason, { headers })
    }
    const target = req.url ?? '/'
    const now = Date.now()
    // The process's start on the clock as it reads now (a wall-clock step since moves it along),
    // not this call's: `npm start` starts the platform beside the bridge, and a ticket it mints
    // while the bridge is still loading must not count as minted before the start.
    const started = now - performance.now()
    // Read from the query as sent (URLSearchParams never throws), so that a target no URL can be
    // made of spends its ticket too: spent by its first use, whatever follows (CONTRACT §6).
    const query = target.indexOf('?')
    const ticket = query < 0 ? '' : new URLSearchParams(target.slice(query + 1)).get('ticket') ?? ''
    const claims = verifyTicket(ticketKeys, ticket, now)
    const fresh = claims !== null && spent.spend(claims, now, performance.now())
    if (!parseTarget(target)) return deny(400, 'the request target is not a valid URL', claims?.username)
    // RFC 9110 §7.8: an upgrade the bridge does not offer, away from /ws (h2c, which `curl --http2`
    // asks for), is ignored and the request served as the plain one it also is: health, not a 404.
    const path = target.split('?', 1)[0]
    if (req.headers.upgrade?.toLowerCase() !== 'websocket' && path !== '/ws') return reinject(server, req, socket, head)
    // Only `/ws` as written: not a path that URL parsing would make it (`/./ws`, `/x/../ws`).
    if (path !== '/ws') return deny(404, 'not found', claims?.username)
    if (!claims) return deny(401, 'missing, invalid or expired ticket')
    // Spent tickets are remembered in memory only: one minted before this process started may have
    // been used by the one before it (a restart within the ticket's minute), so it is refused.
    if (claims.expiresAt - TICKET_TTL_MS < started) return deny(401, 'ticket issued before the bridge started', claims.username)
    if (!fresh) return deny(401, 'ticket already used', claims.username)
    if (!origins.has(req.headers.origin ?? '')) return deny(403, 'origin not allowed', claims.username)
    // RFC 6455 §4.1: the opening handshake is HTTP/1.1 or later (ws would take an HTTP/1.0 one).
    if (req.httpVersionMajor === 1 && req.httpVersionMinor < 1) return deny(400, 'a WebSocket upgrade needs HTTP/1.1', claims.username)
    const open = (): void => {
      denials.set(req, (status, reason, headers) => deny(status, reason, claims.username, headers))
      wss.handleUpgrade(req, socket, head, (ws) => {
        // A protocol error (a frame over 1 MiB, text that is not UTF-8): ws has written its close frame
        // and discards what the client still sends. End the socket after that frame rather than
        // destroy it: a reset while the client is still sending can reach it (or the proxy in
        // between) before the close frame does, and the client sees 1006 instead of 1009.
        ws.on('error', () => {
          socket.end()
          setTimeout(() => ws.terminate(), CLOSE_HANDSHAKE_MS).unref()
        })
        // An upgrade read after SIGTERM (its socket accepted before) gets the shutdown's close too.
        const refusal = stopping ? ([CLOSE_GOING_AWAY, 'terminal bridge shutting down'] as const)
          : connections.size >= config.maxConn ? ([CLOSE_TRY_AGAIN, 'terminal connection limit reached'] as const)
          : null
        if (refusal) {
          // Refused, but a connection all the same: it gets its session line, without a PTY.
          const startedAt = new Date().toISOString()
          const closed = new Promise<void>((resolve) =>
            ws.once('close', () => {
              sessionLog(sessionLine(claims, { pid: null, startedAt, bytesIn: 0, bytesOut: 0 }))
              refused.delete(closed)
              resolve()
            }),
          )
          refused.add(closed)
          setTimeout(() => ws.terminate(), CLOSE_HANDSHAKE_MS).unref()
          return ws.close(refusal[0], refusal[1])
        }
        const done = serveConnection(ws, claims, { registry, log, sessionLog, took: () => heartbeat.took(ws) })
        connections.set(ws, done)
        heartbeat.watch(ws, (socket as Socket).remotePort ?? -1)
        access.watch(ws, ticket, claims.username)
        ws.once('close', () => connections.delete(ws))
      })
    }
    // The platform's word before anything opens: a ticket outlives a logout or a revoke by up to its
    // minute. A platform that gives none lets it open, as open terminals stay open then. A stop
    // meanwhile cuts the question short and waits for the answer it then gives (1001).
    const admitted: Promise<void> = access.admission(ticket).then((verdict) => {
      admitting.delete(admitted)
      if (verdict !== null && !verdict.admitted) return deny(403, `access ended: ${verdict.reason}`, claims.username)
      open()
    })
    admitting.add(admitted)
  })

  async function shutdown(): Promise<void> {
    stopping = true
    heartbeat.stop()
    access.stop()
    server.close()
    const ending = [...connections.values()]
    for (const ws of connections.keys()) {
      ws.close(CLOSE_GOING_AWAY, 'terminal bridge shutting down')
      setTimeout(() => ws.terminate(), CLOSE_HANDSHAKE_MS).unref()
    }
    await Promise.all([...ending, registry.disposeAll(), ...admitting])
    // Refusals still closing, those made meanwhile included: each ends within CLOSE_HANDSHAKE_MS.
    while (refused.size > 0) await Promise.all(refused)
  }

  return { server, shutdown }
}
