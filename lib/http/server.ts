import http, { type IncomingMessage, type ServerResponse } from 'node:http'
import type { BlockList } from 'node:net'
import { clientAddress, header } from './client-address.js'
import { headerLines } from './header-lines.js'
import { PlatformResponse } from './platform-response.js'
import { parseTarget, pathnameOf } from './target.js'
import { NO_PARAMS, type Router, type RouteContext } from './router.js'
import { HttpError, rateLimited } from './errors.js'
import { sendError, toHttpError } from './reply.js'
import { logLine } from '../log.js'
import { CLIENT_CLOSED, logRequest } from './access-log.js'
import { cutLater, refusalStatus, serverOnClientError, serverOnConnect } from './client-error.js'
import { nextRequestId } from './request-id.js'
import { trackConnections } from './close.js'
import { hasBody, MAX_BODY_BYTES, readIgnoredBody } from './body.js'
import { SLOW_CLIENT_LIMITS } from './slow-clients.js'
import { capConnections } from './connection-cap.js'

interface ServerOptions {
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

/** The platform's HTTP server: request ids, access log, CORS, Origin check, routing, error bodies. */
export function createServer(options: ServerOptions): http.Server {
  const origins = new Set(options.origins)
  // Node's own answers to a request without Host (400) and to an Expect other than 100-continue
  // (417) have no JSON body, request id or Vary: the first is answered in handle, the second is
  // served as if the expectation were not there (RFC 9110 §10.1.1 allows either).
  const server = http.createServer(
    { ...SLOW_CLIENT_LIMITS, ServerResponse: PlatformResponse, requireHostHeader: false },
    (req, res) => handle(req, res, options, origins),
  ) as unknown as http.Server
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => handle(req, res, options, origins))
  // Node answers `Expect: 100-continue` with 100 before any handler runs, and the client then sent
  // a body the platform refuses unread (413): the 100 goes out only for a body within the limit.
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    if (!(Number(req.headers['content-length']) > MAX_BODY_BYTES)) res.writeContinue()
    handle(req, res, options, origins)
  })
  // Every header of a request, not the first 2000 (Node's default): the 16 KiB limit bounds them,
  // and a request read anew without its Upgrade (terminal-proxy) must keep its Content-Length.
  server.maxHeadersCount = 0
  server.on('clientError', (err: NodeJS.ErrnoException, socket) => serverOnClientError(err, socket, options.log ?? logLine))
  server.on('connect', (req: IncomingMessage, socket) => serverOnConnect(req, socket, options.log ?? logLine))
  trackConnections(server)
  capConnections(server, options.log ?? logLine)
  return server
}

/**
 * One request on its way through: the RouteContext a handler gets, plus what the access log and the
 * error path need. A class, so the hot path allocates one object with a known shape instead of a
 * context literal, a getter and three closures per request.
 */
export class Exchange implements RouteContext {
  params = NO_PARAMS
  readonly started = performance.now()
  readonly requestId = nextRequestId()
  readonly method: string
  readonly target: string
  readonly pathname: string
  readonly validTarget: boolean
  readonly api: boolean
  readonly ip: string
  readonly proto: 'http' | 'https'
  #url: URL | undefined

  constructor(
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    readonly log: ((entry: Record<string, unknown>) => void) | undefined,
    trust: BlockList,
  ) {
    const { ip, proto, unread } = clientAddress(req, trust)
    this.ip = ip
    this.proto = proto
    if (unread !== undefined) warnUnread(log, ip, unread)
    this.method = req.method ?? 'GET'
    this.target = req.url ?? '/'
    const pathname = pathnameOf(this.target)
    // A target no URL can be made of is answered 400 in JSON (handle checks), logged with path ''.
    this.validTarget = pathname !== null
    this.pathname = pathname ?? ''
    this.api = pathname === null || pathname.startsWith('/api/') || pathname === '/dev/terminal/ticket' || pathname === '/dev/terminal/access'
  }

  /** Parsed only when a handler reads it (query strings); most never do. Handlers run only for valid targets. */
  get url(): URL {
    return (this.#url ??= parseTarget(this.target)!)
  }

  /** Render a thrown error; a 500 is logged with its stack, the client sees only the fixed body. */
  fail(err: unknown): void {
    const { req, res } = this
    const httpError = toHttpError(err)
    if (httpError.status >= 500) {
      const error = err instanceof Error ? err.stack ?? err.message : String(err)
      ;(this.log ?? logLine)({ event: 'http.error', id: this.requestId, method: this.method, path: this.pathname, error })
    }
    const socket = req.socket
    // A body refused before it was read (a 413, or a 401, 404 or 429 answered from the headers) is
    // never read: the connection ends after this answer, which says so (a client that took it at
    // its word and sent the next request on it would see that request dropped), and requests
    // pipelined behind the body are not served (RFC 9112 §9.6): Node would run them and then drop
    // their answers with the connection. The parser marks even a request without a body complete
    // only after the handler returns, so the headers say whether a body is on its way: an early
    // 404 to a GET keeps the connection.
    if (!req.complete && socket && hasBody(req)) {
      res.shouldKeepAlive = false
      closing.add(socket)
    }
    sendError(res, httpError, !this.api)
  }
}

/** The servers' logs that have been told of an X-Forwarded-For hop they could not read: once each. */
const warnedUnread = new WeakSet<object>()

/**
 * Once per server: requests through a trusted proxy that writes hops that are no address (`unknown`,
 * `ip:port`) all count as that proxy, their sign-in failures together, which an operator should hear of.
 */
function warnUnread(log: ((entry: Record<string, unknown>) => void) | undefined, proxy: string, hop: string): void {
  if (log === undefined || warnedUnread.has(log)) return
  warnedUnread.add(log)
  log({
    event: 'http.forwarded_unread',
    proxy,
    hop: hop.slice(0, 64),
    note: 'an X-Forwarded-For hop from a trusted proxy is no address: the proxy stands for its clients (README, TRUST_PROXY); logged once',
  })
}

/** Connections that end after the answer being made: requests read on them after it are not served. */
const closing = new WeakSet<object>()

/**
 * Requests read on one connection whose answers are not all out, past which the connection is
 * refused: a client that pipelines requests and never reads had every one of them answered into
 * memory (400 requests of 57 bytes, 5.6 MB of answers), and held them and its descriptor for good.
 * Browsers and proxies send one request at a time.
 */
const MAX_UNANSWERED = 32
const unanswered = new WeakMap<object, number>()

/** The access-log line, one per request, when the response is done (or the client went away). */
function resOnClose(this: PlatformResponse): void {
  const ex = this.exchange!
  const socket = ex.req.socket
  unanswered.set(socket, unanswered.get(socket)! - 1)
  // Closed before its answer was out: the client went away (nginx's 499, "client closed request").
  // A request a parser refusal cut short (a body that never came: 408) has that refusal's status.
  const status = this.writableFinished ? this.statusCode : ((ex.req.complete ? undefined : refusalStatus(ex.req.socket)) ?? CLIENT_CLOSED)
  logRequest(ex, status)
}

// Synchronous until a handler returns a promise: an async function per request cost the catalogue
// benchmark a microtask round and a promise for every answer.
function handle(
  req: IncomingMessage,
  res: ServerResponse,
  options: ServerOptions,
  origins: Set<string>,
): void {
  const socket = req.socket
  if (closing.has(socket)) return
  const pending = (unanswered.get(socket) ?? 0) + 1
  unanswered.set(socket, pending)
  const ex = new Exchange(req, res, options.log, options.trustProxy)
  const { method, pathname } = ex
  ;(res as PlatformResponse).exchange = ex
  // `on`, not `once`: a response closes once, and once's wrapper cost a closure per request.
  res.on('close', resOnClose)
  try {
    if (pending > MAX_UNANSWERED) {
      // Answered in its turn after those before it, then the connection ends, and is cut if the
      // client has not read that far within the refusals' drain time. Requests behind it are dropped.
      res.shouldKeepAlive = false
      closing.add(socket)
      cutLater(socket)
      throw rateLimited(`more than ${MAX_UNANSWERED} requests on this connection wait for their answers; read them first`, 1000)
    }
    if (!ex.validTarget) throw new HttpError(400, 'BAD_REQUEST', 'the request target is not a valid URL')
    // RFC 9112 §3.2: HTTP/1.1 requires Host (HTTP/1.0 may leave it out), and more than one Host
    // line is 400 whatever the version (Node keeps the first and drops the rest).
    const hosts = headerLines(req.rawHeaders, 'host')
    if (hosts > 1) throw new HttpError(400, 'BAD_REQUEST', 'the Host header is repeated')
    if (hosts === 0 && req.httpVersionMinor >= 1) throw new HttpError(400, 'BAD_REQUEST', 'the Host header is missing')
    // Node joins repeated Origin headers into one string, as it does every header but Set-Cookie.
    const origin = req.headers.origin
    const allowed = origin !== undefined && origins.has(origin)
    if (ex.api) {
      if (allowed) {
        res.setHeader('access-control-allow-origin', origin)
        res.setHeader('access-control-allow-credentials', 'true')
        res.setHeader('access-control-expose-headers', 'Allow, ETag, Retry-After, X-Request-Id')
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
    ex.params = match.params
    // No GET route takes a body, and Node would drain one sent anyway, however large: it is read
    // under the rules of the endpoints that take none (413 past the limit, 415; CONTRACT §4).
    if ((method === 'GET' || method === 'HEAD') && hasBody(req)) {
      const { handler } = match
      readIgnoredBody(req).then(() => handler(ex)).catch((err: unknown) => ex.fail(err))
      return
    }
    const result = match.handler(ex)
    if (result instanceof Promise) result.catch((err: unknown) => ex.fail(err))
  } catch (err) {
    ex.fail(err)
  }
}
