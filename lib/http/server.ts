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

/** Write one JSON line to stdout. */
export function logLine(entry: Record<string, unknown>): void {
  process.stdout.write(JSON.stringify({ time: new Date().toISOString(), ...entry }) + '\n')
}

/** The platform's HTTP server: request ids, access log, CORS, Origin check, routing, error bodies. */
export function createServer(options: ServerOptions): http.Server {
  const log = options.log ?? logLine
  const origins = new Set(options.origins)
  const server = http.createServer((req, res) => {
    void handle(req, res, options, origins, log)
  })
  server.headersTimeout = HEADERS_TIMEOUT_MS
  server.requestTimeout = REQUEST_TIMEOUT_MS
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS
  return server
}

/** The client address: the peer's, unless the peer is a trusted proxy, then the nearest untrusted X-Forwarded-For hop. */
export function clientAddress(req: IncomingMessage, trust: BlockList): { ip: string; proto: 'http' | 'https' } {
  let ip = normalize(req.socket.remoteAddress ?? '')
  let proto: 'http' | 'https' = 'encrypted' in req.socket ? 'https' : 'http'
  if (!isTrusted(ip, trust)) return { ip, proto }
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

async function handle(
  req: IncomingMessage,
  res: ServerResponse,
  options: ServerOptions,
  origins: Set<string>,
  log: (entry: Record<string, unknown>) => void,
): Promise<void> {
  const started = process.hrtime.bigint()
  const requestId = randomUUID()
  const { ip, proto } = clientAddress(req, options.trustProxy)
  const url = new URL(req.url ?? '/', 'http://platform.invalid')
  const method = req.method ?? 'GET'
  const api = url.pathname.startsWith('/api/') || url.pathname === '/dev/terminal/ticket'
  res.setHeader('x-request-id', requestId)
  res.on('close', () => {
    const ms = Number(process.hrtime.bigint() - started) / 1e6
    log({ event: 'http.request', id: requestId, method, path: url.pathname, status: res.statusCode, ms: Math.round(ms * 100) / 100, ip })
  })
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
    const match = options.router.find(method, url.pathname)
    if (match.kind === 'none') throw new HttpError(404, 'NOT_FOUND', `no route for ${url.pathname}`)
    if (match.kind === 'method') {
      throw new HttpError(405, 'METHOD_NOT_ALLOWED', `${method} not allowed`, undefined, { allow: match.allow.join(', ') })
    }
    await match.handler({ req, res, params: match.params, url, ip, proto, requestId })
  } catch (err) {
    const httpError = toHttpError(err)
    if (httpError.status >= 500) {
      log({ event: 'http.error', id: requestId, method, path: url.pathname, error: err instanceof Error ? err.stack ?? err.message : String(err) })
    }
    sendError(res, httpError, !api)
    // A body we refused to read must not be parsed as the next request on a kept-alive socket.
    if (!req.complete) res.once('finish', () => req.socket.destroySoon())
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
