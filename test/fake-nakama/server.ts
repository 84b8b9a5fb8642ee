import http from 'node:http'
import { setTimeout as sleep } from 'node:timers/promises'
import type { AddressInfo } from 'node:net'
import { Api, type Answer, type Call, type SessionConfig } from './api.js'
import { cors } from './cors.js'
import { FakeError, httpStatus } from './errors.js'
import { verifyToken } from './jwt.js'
import { loadRuntime, type Runtime } from './runtime.js'
import { FakeState, type Flavour } from './state.js'

/** How the fake is set up; defaults are the settings the README recommends, on v3.40 behaviour. */
export interface FakeNakamaOptions {
  serverKey?: string
  httpKey?: string
  session?: Partial<SessionConfig>
  /** '3.18' imitates the older server of nakama-api.md §5 (no iat, limit 100, ranks always). */
  version?: '3.18' | '3.40'
  now?: () => number
  /** The JavaScript module's source: nakama/modules/playfield.js when omitted, none at all when null. */
  module?: string | null
}

/**
 * What a test may do to a request before it is served: no answer, none ever, a 500, the given error
 * (gateway body, nakama-api.md §1.0), or any answer the function writes (a proxy's page, a broken body).
 */
export type Intercept = 'drop' | 'hang' | 'fail' | { status: number; code: number; message: string } | ((res: http.ServerResponse) => void) | undefined

/** A running fake: its URL, its database, and switches to take it down and bring it back. */
export interface FakeNakama {
  url: string
  port: number
  /** socket.server_key and runtime.http_key, read at each request: a test may change them. */
  serverKey: string
  httpKey: string
  state: FakeState
  runtime: Runtime
  /** Requests served, by "METHOD /path" (query left out). */
  calls: Map<string, number>
  intercept: ((method: string, path: string) => Intercept) | null
  /** Close the listener and every connection: clients see ECONNREFUSED. */
  stop(): Promise<void>
  /** Listen again on the same port. */
  start(): Promise<void>
  /** stop + start, losing what Nakama keeps only in memory (the logout blacklist). */
  restart(): Promise<void>
  close(): Promise<void>
}

/** RpcFuncHttp's route, /v2/rpc/{id}. */
const RPC_PATH = /^\/v2\/rpc\/([^/]+)$/
/** A route Nakama has that the fake does not imitate: a loud 500 rather than a wrong answer. */
function notModelled(call: Call): never {
  throw new Error(`${call.method} ${call.path} is not modelled by the fake Nakama`)
}
/** socket.max_request_size_bytes, default 262,144 (server/config.go NewSocketConfig). */
const MAX_REQUEST_BYTES = 262_144
/**
 * Past the limit, http.MaxBytesReader (wrapped around every request in server/api.go) fails the
 * read: the RPC handler answers 400 with this exact body (server/api_rpc.go requestBodyTooLargeBytes),
 * and grpc-gateway turns the failed body read into InvalidArgument with the reader's message.
 */
const TOO_LARGE = 'http: request body too large'

/** Start a fake Nakama on an ephemeral port of 127.0.0.1 that runs nakama/modules/playfield.js. */
export async function startFakeNakama(options: FakeNakamaOptions = {}): Promise<FakeNakama> {
  const old = options.version === '3.18'
  const flavour: Flavour = { iat: !old, maxLimit: old ? 100 : 1000, ranksFlag: !old, wrappedRenameError: !old }
  const state = new FakeState(flavour, options.now ?? Date.now)
  const session: SessionConfig = {
    encryptionKey: 'fake-encryption-key', refreshEncryptionKey: 'fake-refresh-encryption-key',
    tokenExpirySec: 3600, refreshTokenExpirySec: 2_592_000, ...options.session,
  }
  const runtime = loadRuntime(state, options.module, session)
  const api = new Api(state, runtime, session)
  const calls = new Map<string, number>()
  const held = new Set<http.ServerResponse>()

  // parseBasicAuth (server/api.go): "Basic " + base64 of "user:password", else not Basic at all.
  const basic = (header: string | undefined, key: string): boolean | null => {
    if (!header?.startsWith('Basic ')) return null
    const encoded = header.slice(6)
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(encoded) || encoded.length % 4 !== 0) return null
    const decoded = Buffer.from(encoded, 'base64').toString()
    const colon = decoded.indexOf(':')
    if (colon < 0) return null
    return decoded.slice(0, colon) === key
  }
  // parseBearerAuth plus the session cache: anything but a valid, unrevoked "Bearer <JWT>" is invalid.
  const bearer = (header: string): Call['claims'] => {
    const claims = header.startsWith('Bearer ') ? verifyToken(header.slice(7), session.encryptionKey, Math.floor(state.now() / 1000)) : null
    if (!claims || state.blacklist.session.has(claims.tid)) throw new FakeError(16, 'Auth token invalid')
    return claims
  }
  // RpcFuncHttp writes its own bodies: {"error","message","code"} (nakama-api.md §1.9).
  const rpcError = (code: number, message: string) => Object.assign(new FakeError(code, message), { rpc: true })

  // The gateway's routes the fake serves (apigrpc.proto), with the key each one's method takes.
  const gateway: Array<{ method: string; path: RegExp; auth: 'server key' | 'session'; serve: (call: Call, params: string[]) => Answer }> = [
    { method: 'POST', path: /^\/v2\/account\/authenticate\/custom$/, auth: 'server key', serve: (c) => api.authenticateCustom(c) },
    { method: 'POST', path: /^\/v2\/account\/authenticate\/device$/, auth: 'server key', serve: (c) => api.authenticateDevice(c) },
    { method: 'POST', path: /^\/v2\/account\/authenticate\/email$/, auth: 'server key', serve: (c) => api.authenticateEmail(c) },
    { method: 'POST', path: /^\/v2\/account\/session\/refresh$/, auth: 'server key', serve: (c) => api.refresh(c) },
    { method: 'POST', path: /^\/v2\/session\/logout$/, auth: 'session', serve: (c) => api.logout(c) },
    { method: 'GET', path: /^\/v2\/account$/, auth: 'session', serve: (c) => api.getAccount(c) },
    { method: 'PUT', path: /^\/v2\/account$/, auth: 'session', serve: (c) => api.updateAccount(c) },
    { method: 'GET', path: /^\/v2\/leaderboard\/([^/]+)$/, auth: 'session', serve: (c, [id]) => api.listRecords(c, id!) },
    { method: 'POST', path: /^\/v2\/leaderboard\/([^/]+)$/, auth: 'session', serve: (c, [id]) => api.writeRecord(c, id!) },
    { method: 'GET', path: /^\/v2\/leaderboard\/([^/]+)\/owner\/([^/]+)$/, auth: 'session', serve: (c, [id, owner]) => api.listAroundOwner(c, id!, owner!) },
    // Nakama's too (DeleteAccount, DeleteLeaderboardRecord), so never a 501 here; nothing calls them.
    { method: 'DELETE', path: /^\/v2\/account$/, auth: 'session', serve: notModelled },
    { method: 'DELETE', path: /^\/v2\/leaderboard\/([^/]+)$/, auth: 'session', serve: notModelled },
  ]

  const route = (call: Call, auth: string | undefined, tooLarge: boolean): Answer => {
    const { method, path } = call
    if (path === '/' && method === 'GET') return { raw: '', contentType: 'text/plain' }
    const rpc = RPC_PATH.exec(path)
    // gorilla mux hands GET and POST of /v2/rpc/{id} to RpcFuncHttp; other methods go on to the gateway.
    if (rpc && (method === 'GET' || method === 'POST')) return serveRpc(call, decodeURIComponent(rpc[1]!), auth, tooLarge)
    const found = gateway.find((r) => r.method === method && r.path.test(path))
    if (!found) {
      // grpc-gateway: a path it knows under another method is 405, which Nakama's handleRoutingError
      // turns into Unimplemented (HTTP 501); RpcFunc's bindings are GET and POST /v2/rpc/{id}.
      if (rpc || gateway.some((r) => r.path.test(path))) throw new FakeError(12, 'Method Not Allowed')
      throw new FakeError(5, 'Not Found')
    }
    // The gateway reads the body before the gRPC call, and so before its authentication.
    if (tooLarge && method !== 'GET') throw new FakeError(3, TOO_LARGE)
    if (found.auth === 'server key') {
      if (!auth) throw new FakeError(16, 'Server key required')
      if (!basic(auth, fake.serverKey)) throw new FakeError(16, 'Server key invalid')
    } else {
      if (!auth) throw new FakeError(16, 'Auth token required')
      call.claims = bearer(auth)
    }
    return found.serve(call, found.path.exec(path)!.slice(1).map(decodeURIComponent))
  }

  // RpcFuncHttp: a non-empty ?http_key= first, then a Basic header (HTTP key), then a Bearer session.
  const serveRpc = (call: Call, id: string, auth: string | undefined, tooLarge: boolean): Answer => {
    const key = call.query.get('http_key') ?? ''
    if (key !== '') {
      if (key !== fake.httpKey) throw rpcError(16, 'HTTP key invalid')
    } else if (auth) {
      const ok = basic(auth, fake.httpKey)
      if (ok === false) throw rpcError(16, 'HTTP key invalid')
      if (ok === null) {
        try {
          call.claims = bearer(auth)
        } catch {
          throw rpcError(16, 'Auth token invalid')
        }
      }
    } else {
      throw rpcError(16, 'Auth token or HTTP key required')
    }
    if (!runtime.rpcs.has(id.toLowerCase())) throw rpcError(5, 'RPC function not found')
    if (tooLarge && call.method === 'POST') throw Object.assign(new FakeError(3, TOO_LARGE), { body: { code: 3, message: TOO_LARGE } })
    try {
      return api.rpc(call, id)
    } catch (e) {
      throw e instanceof FakeError ? Object.assign(e, { rpc: true }) : e
    }
  }

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    let size = 0
    req.on('data', (c: Buffer) => {
      size += c.length
      if (size <= MAX_REQUEST_BYTES) chunks.push(c)
    })
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://fake')
      const name = `${req.method} ${url.pathname}`
      const action = fake.intercept?.(req.method ?? 'GET', url.pathname)
      if (action === 'drop') return req.socket.destroy()
      if (action === 'hang') return void held.add(res)
      calls.set(name, (calls.get(name) ?? 0) + 1)
      if (typeof action === 'function') return action(res)
      // Every response carries Cache-Control (nakama-api.md §1.0), a CORS preflight answer too.
      const cacheControl = { 'cache-control': 'no-store, no-cache, must-revalidate' }
      const crossOrigin = cors(req)
      if ('answer' in crossOrigin) {
        res.writeHead(crossOrigin.answer.status, { ...crossOrigin.answer.headers, ...cacheControl })
        return res.end()
      }
      const headers = { ...crossOrigin.headers, ...cacheControl }
      if (action === 'fail' || typeof action === 'object') {
        const { status, code, message } = action === 'fail' ? { status: 500, code: 13, message: 'Internal error.' } : action
        res.writeHead(status, { ...headers, 'content-type': 'application/json' })
        return res.end(JSON.stringify({ code, message }))
      }
      const call: Call = { method: req.method ?? 'GET', path: url.pathname, query: url.searchParams, body: Buffer.concat(chunks).toString(), contentType: req.headers['content-type'] }
      try {
        const answer = route(call, req.headers.authorization, size > MAX_REQUEST_BYTES)
        if ('raw' in answer) {
          res.writeHead(200, { ...headers, 'content-type': answer.contentType })
          return res.end(answer.raw)
        }
        res.writeHead(200, { ...headers, 'content-type': 'application/json' })
        res.end(JSON.stringify(answer.json))
      } catch (e) {
        const err = e instanceof FakeError ? e : new FakeError(13, 'Internal error.')
        if (!(e instanceof FakeError)) process.stderr.write(`fake nakama: ${(e as Error).stack}\n`)
        res.writeHead(httpStatus(err.code), { ...headers, 'content-type': 'application/json' })
        const { rpc, error, body } = err as { rpc?: boolean; error?: unknown; body?: unknown }
        res.end(JSON.stringify(body ?? (rpc ? { code: err.code, error: error ?? err.message, message: err.message } : { code: err.code, message: err.message })))
      }
    })
  })
  server.keepAliveTimeout = 5000

  let port = 0
  const listen = () => new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject)
      port = (server.address() as AddressInfo).port
      server.unref()
      resolve()
    })
  })
  const stop = () => new Promise<void>((resolve) => {
    if (!server.listening) return resolve()
    for (const res of held) res.socket?.destroy()
    held.clear()
    server.close(() => resolve())
    server.closeAllConnections()
  })
  await listen()
  const fake: FakeNakama = {
    url: `http://127.0.0.1:${port}`, port, serverKey: options.serverKey ?? 'defaultkey', httpKey: options.httpKey ?? 'defaulthttpkey',
    state, runtime, calls, intercept: null,
    stop, start: listen,
    async restart() {
      await stop()
      state.blacklist.session.clear()
      state.blacklist.refresh.clear()
      // A real restart takes seconds: let clients in this process see their sockets close first.
      await sleep(50)
      await listen()
    },
    close: stop,
  }
  return fake
}
