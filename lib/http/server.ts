import http, { type IncomingMessage, type ServerResponse } from 'node:http'
import { randomUUID } from 'node:crypto'
import { isIP, type BlockList } from 'node:net'
import type { Router } from './router.js'
import { HttpError } from './errors.js'
import { sendError, toHttpError } from './reply.js'

export interface ServerOptions {
  router: Router
  /** Allowed origins: CORS allow-list and the Origin check of state-changing requests. */
  origins: string[]
  /** Peers whose X-Forwarded-For / X-Forwarded-Proto are believed. */
  trustProxy: BlockList
  /** Where access-log lines and errors go; one JSON object per line. */
  log?: (entry: Record<string, unknown>) => void
}

const STATE_CHANGING = new Set(['POST', 'PUT', 'DELETE', 'PATCH'])
const CORS_METHODS = 'GET, HEAD, POST, PUT, DELETE, OPTIONS'
/** Slow clients get this long to send headers and the whole request (slowloris). */
const HEADERS_TIMEOUT_MS = 10_000
const REQUEST_TIMEOUT_MS = 30_000
const KEEP_ALIVE_TIMEOUT_MS = 5_000

// Lines written in one turn of the event loop leave in one write: a write per request cost the
// catalogue benchmark a fifth of its throughput. 'exit' flushes what is left (stdout is synchronous
// for files and pipes on Linux).
let pending: string[] = []
let flushScheduled = false
let isoMs = 0
let iso = ''
function flushLog(): void {
  flushScheduled = false
  if (pending.length === 0) return
  const text = pending.join('')
  pending = []
  process.stdout.write(text)
}
process.on('exit', flushLog)

/** Write one JSON line to stdout (batched per event-loop turn, flushed at exit). */
export function logLine(entry: Record<string, unknown>): void {
  const now = Date.now()
  if (now !== isoMs) {
    isoMs = now
    iso = new Date(now).toISOString()
  }
  pending.push(JSON.stringify({ time: iso, ...entry }) + '\n')
  if (!flushScheduled) {
    flushScheduled = true
    setImmediate(flushLog)
  }
}

/** The platform's HTTP server: request ids, access log, CORS, Origin check, routing, error bodies. */
export function createServer(options: ServerOptions): http.Server {
  const log = options.log ?? logLine
  const origins = new Set(options.origins)
  const server = http.createServer((req, res) => {
    handle(req, res, options, origins, log)
  })
  server.headersTimeout = HEADERS_TIMEOUT_MS
  server.requestTimeout = REQUEST_TIMEOUT_MS
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS
  return server
}

const trustedPeers = new WeakMap<object, boolean>()

/** The client address: the peer's, unless the peer is a trusted proxy, then the nearest untrusted X-Forwarded-For hop. */
export function clientAddress(req: IncomingMessage, trust: BlockList): { ip: string; proto: 'http' | 'https' } {
  let ip = normalize(req.socket.remoteAddress ?? '')
  let proto: 'http' | 'https' = 'encrypted' in req.socket ? 'https' : 'http'
  // The peer of a socket never changes: check it against the BlockList once per connection.
  let peerTrusted = trustedPeers.get(req.socket)
  if (peerTrusted === undefined) trustedPeers.set(req.socket, (peerTrusted = isTrusted(ip, trust)))
  if (!peerTrusted) return { ip, proto }
  const forwarded = header(req, 'x-forwarded-for')
  if (forwarded) {
    const hops = forwarded.split(',').map((s) => normalize(s.trim())).filter((s) => isIP(s) !== 0)
    for (let i = hops.length - 1; i >= 0; i--) {
      ip = hops[i]!
      if (!isTrusted(ip, trust)) break
    }
  }
  const fproto = header(req, 'x-forwarded-proto')?.split(',')[0]?.trim()
  if (fproto === 'https' || fproto === 'http') proto = fproto
  return { ip, proto }
}

function normalize(address: string): string {
  return address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address
}

function isTrusted(ip: string, trust: BlockList): boolean {
  const family = isIP(ip)
  if (family === 0) return false
  return trust.check(ip, family === 6 ? 'ipv6' : 'ipv4') || (family === 4 && trust.check(`::ffff:${ip}`, 'ipv6'))
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name]
  return Array.isArray(value) ? value.join(',') : value
}

const URL_BASE = 'http://platform.invalid'
// A path WHATWG URL parsing would change (dot segments, backslashes, encoded dots, `//`, no leading
// slash) goes through new URL; every other path is used as written, which saves a parse per request.
const NEEDS_URL_PARSE = /\/\.|\\|%2e|^\/\/|^[^/]/i

/** The path of a request target, as new URL(target).pathname would give it. */
function pathnameOf(target: string): string {
  const q = target.indexOf('?')
  const path = q < 0 ? target : target.slice(0, q)
  return NEEDS_URL_PARSE.test(path) || path.includes('#') ? new URL(target, URL_BASE).pathname : path
}

// Synchronous until a handler returns a promise: an async function per request cost the catalogue
// benchmark a microtask round and a promise for every answer.
function handle(
  req: IncomingMessage,
  res: ServerResponse,
  options: ServerOptions,
  origins: Set<string>,
  log: (entry: Record<string, unknown>) => void,
): void {
  const started = performance.now()
  const requestId = randomUUID()
  const { ip, proto } = clientAddress(req, options.trustProxy)
  const target = req.url ?? '/'
  const pathname = pathnameOf(target)
  const method = req.method ?? 'GET'
  const api = pathname.startsWith('/api/') || pathname === '/dev/terminal/ticket'
  res.setHeader('x-request-id', requestId)
  res.on('close', () => {
    const ms = Math.round((performance.now() - started) * 100) / 100
    log({ event: 'http.request', id: requestId, method, path: pathname, status: res.statusCode, ms, ip })
  })
  const fail = (err: unknown): void => {
    const httpError = toHttpError(err)
    if (httpError.status >= 500) {
      log({ event: 'http.error', id: requestId, method, path: pathname, error: err instanceof Error ? err.stack ?? err.message : String(err) })
    }
    sendError(res, httpError, !api)
    // A body we refused to read must not be parsed as the next request on a kept-alive socket.
    // Take the socket now: by 'finish' the response may have let go of it (req.socket is null then).
    const socket = req.socket
    if (!req.complete && socket) res.once('finish', () => socket.destroySoon())
  }
  try {
    const origin = header(req, 'origin')
    const allowed = origin !== undefined && origins.has(origin)
    if (api) {
      res.setHeader('vary', 'Origin')
      if (allowed) {
        res.setHeader('access-control-allow-origin', origin)
        res.setHeader('access-control-allow-credentials', 'true')
        res.setHeader('access-control-expose-headers', 'ETag, Retry-After, X-Request-Id')
      }
      if (method === 'OPTIONS') {
        if (allowed) {
          res.setHeader('access-control-allow-methods', CORS_METHODS)
          res.setHeader('access-control-allow-headers', header(req, 'access-control-request-headers') ?? 'Content-Type')
          res.setHeader('access-control-max-age', '600')
        }
        res.writeHead(204).end()
        return
      }
    }
    if (STATE_CHANGING.has(method) && origin !== undefined && !allowed) {
      throw new HttpError(403, 'FORBIDDEN_ORIGIN', 'origin not allowed')
    }
    const match = options.router.find(method, pathname)
    if (match.kind === 'none') throw new HttpError(404, 'NOT_FOUND', `no route for ${pathname}`)
    if (match.kind === 'method') {
      throw new HttpError(405, 'METHOD_NOT_ALLOWED', `${method} not allowed`, undefined, { allow: match.allow.join(', ') })
    }
    let url: URL | undefined
    const result = match.handler({
      req, res, params: match.params, ip, proto, requestId,
      // Parsed only when a handler reads it (query strings); most never do.
      get url() {
        return (url ??= new URL(target, URL_BASE))
      },
    })
    if (result instanceof Promise) result.catch(fail)
  } catch (err) {
    fail(err)
  }
}

/** Stop accepting, let in-flight requests finish, close idle keep-alive sockets; resolve when closed or after `graceMs`. */
export function closeGracefully(server: http.Server, graceMs: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      server.closeAllConnections()
      resolve()
    }, graceMs)
    timer.unref()
    server.close(() => {
      clearTimeout(timer)
      resolve()
    })
    server.closeIdleConnections()
  })
}
