import type { NakamaConfig } from '../../config.js'
import { HttpError } from '../../http/errors.js'
import { logLine } from '../../http/log.js'

/** A 4xx answer of Nakama: its HTTP status, gRPC code and message, for the backend to map. */
export class NakamaError extends Error {
  override name = 'NakamaError'
  constructor(
    readonly status: number,
    readonly grpcCode: number,
    message: string,
  ) {
    super(message)
  }
}

/** A 2xx answer of Nakama whose body is not JSON: whatever answered is not Nakama's API. */
export class NakamaNotJson extends Error {
  override name = 'NakamaNotJson'
  constructor(
    readonly request: string,
    readonly status: number,
  ) {
    super(`Nakama ${request}: answer is not JSON`)
  }
}

/** The variable an operator must fix, and what it must be. */
const FIXES = {
  NAKAMA_SERVER_KEY: "Nakama's socket.server_key",
  NAKAMA_HTTP_KEY: "Nakama's runtime.http_key",
  NAKAMA_URL: 'a Nakama running nakama/modules/playfield.js (README: Installing the module)',
} as const

/**
 * Nakama refused the platform's own key, or runs without the module: nothing a user did. Users get
 * 503 BACKEND_UNAVAILABLE (never INVALID_CREDENTIALS or INTERNAL); the cause is logged where it is thrown.
 */
export class NakamaMisconfigured extends HttpError {
  constructor(
    readonly variable: keyof typeof FIXES,
    readonly problem: string,
  ) {
    super(503, 'BACKEND_UNAVAILABLE', 'the game backend is unavailable; try again shortly')
  }

  /** What the variable must be. */
  get expected(): string {
    return FIXES[this.variable]
  }
}

/** How a request authenticates (nakama-api.md §1.0): server key, runtime HTTP key, or a session. */
type NakamaAuth = 'server' | 'http' | { bearer: string }

/** One REST call's query, body and credentials. */
export interface RequestOptions {
  query?: Record<string, string>
  body?: unknown
  auth: NakamaAuth
  /** Safe to send twice: only these are retried after a network failure or a 5xx. */
  idempotent?: boolean
}

/** Time limit and log of a NakamaClient. */
export interface ClientOptions {
  /** Per-request limit; past it the request is abandoned and answered 503. */
  timeoutMs?: number
  /** Where a misconfiguration's cause, or an overload (429), is logged (logLine when omitted). */
  log?: (entry: Record<string, unknown>) => void
}

/** 5 s: a healthy Nakama answers in milliseconds; a request past this is a hung node. */
const DEFAULT_TIMEOUT_MS = 5_000
/** One more try for reads, after this pause: enough to ride over a node restart or a dropped keep-alive socket. */
const RETRY_DELAY_MS = 150

/** The contract's answer whenever Nakama cannot be reached or fails on its side (CONTRACT §4). */
export function backendUnavailable(): HttpError {
  return new HttpError(503, 'BACKEND_UNAVAILABLE', 'the game backend is unavailable; try again shortly')
}

/** Nakama's REST API over the built-in fetch (keep-alive by default), with time-outs and error mapping. */
export class NakamaClient {
  readonly #base: string
  readonly #server: string
  readonly #http: string
  readonly #timeoutMs: number
  readonly #log: (entry: Record<string, unknown>) => void

  constructor(config: NakamaConfig, options: ClientOptions = {}) {
    this.#base = config.url
    // Basic auth with the key as user name and an empty password: the colon is required.
    this.#server = `Basic ${Buffer.from(`${config.serverKey}:`).toString('base64')}`
    this.#http = `Basic ${Buffer.from(`${config.httpKey}:`).toString('base64')}`
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS
    this.#log = options.log ?? logLine
  }

  /** Send one request; resolves with the parsed JSON body, throws NakamaError (4xx) or 503. */
  async request(method: string, path: string, options: RequestOptions): Promise<unknown> {
    try {
      return await this.#once(method, path, options)
    } catch (err) {
      // A refused connection never reached Nakama, so even a write may be sent again.
      if (!(err instanceof Retryable) || !(options.idempotent || err.refused)) throw unwrap(err)
      await new Promise((resolve) => setTimeout(resolve, RETRY_DELAY_MS))
      return this.#once(method, path, options).catch((again: unknown) => {
        throw unwrap(again)
      })
    }
  }

  /** Call a runtime RPC of nakama/modules/playfield.js with the HTTP key, JSON in and out (unwrap). */
  async rpc<T>(id: string, payload: unknown, idempotent = false): Promise<T> {
    // `?unwrap` as nakama-api.md §1.9 writes it: the key present, with no value (URLSearchParams would write `unwrap=`).
    return (await this.request('POST', `/v2/rpc/${id}?unwrap`, { body: payload, auth: 'http', idempotent })) as T
  }

  async #once(method: string, path: string, options: RequestOptions): Promise<unknown> {
    const url = new URL(this.#base + path)
    for (const [k, v] of Object.entries(options.query ?? {})) url.searchParams.set(k, v)
    const auth = options.auth === 'server' ? this.#server : options.auth === 'http' ? this.#http : `Bearer ${options.auth.bearer}`
    let res: Response
    let text: string
    try {
      res = await fetch(url, {
        method,
        headers: { authorization: auth, 'content-type': 'application/json', accept: 'application/json' },
        body: options.body === undefined ? undefined : JSON.stringify(options.body),
        signal: AbortSignal.timeout(this.#timeoutMs),
      })
      text = await res.text()
    } catch (err) {
      // A time-out is not retried: the node is slow, and a second wait doubles the caller's.
      if (err instanceof Error && err.name === 'TimeoutError') throw backendUnavailable()
      throw new Retryable((err as { cause?: { code?: unknown } }).cause?.code === 'ECONNREFUSED')
    }
    if (res.status >= 500) throw new Retryable(false)
    let body: unknown = null
    try {
      body = text === '' ? {} : JSON.parse(text)
    } catch {
      if (res.ok) throw new NakamaNotJson(`${method} ${path}`, res.status)
    }
    if (res.ok) return body
    const fields = (body ?? {}) as { code?: unknown; message?: unknown }
    const code = Number(fields.code ?? 0)
    const message = String(fields.message ?? res.statusText)
    const variable = misconfigured(options.auth, path, res.status, message)
    if (variable) {
      this.#log({ event: 'nakama.misconfigured', variable, problem: message, status: res.status, request: `${method} ${path}`, expected: FIXES[variable] })
      throw new NakamaMisconfigured(variable, message)
    }
    // Aborted: the module gave up after its storage-version retries (contention); worth another try later.
    if (code === 10 && path.startsWith('/v2/rpc/')) throw backendUnavailable()
    // ResourceExhausted: Nakama (or a proxy before it) is overloaded, whatever was asked; logged, as
    // an operator needs to know.
    if (res.status === 429) {
      this.#log({ event: 'nakama.refused', status: res.status, problem: message, request: `${method} ${path}` })
      throw backendUnavailable()
    }
    throw new NakamaError(res.status, code, message)
  }
}

/**
 * Which variable is wrong when Nakama refuses the platform itself (nakama-api.md §1.0, §1.9): the
 * server key on sign-in calls (not a user's wrong password: 'Invalid credentials.'), the HTTP key
 * on RPCs, or the URL of a Nakama without the module ('RPC function not found').
 */
function misconfigured(auth: NakamaAuth, path: string, status: number, message: string): keyof typeof FIXES | null {
  if (status === 401 && auth === 'server' && message.startsWith('Server key')) return 'NAKAMA_SERVER_KEY'
  if (status === 401 && auth === 'http') return 'NAKAMA_HTTP_KEY'
  if (status === 404 && path.startsWith('/v2/rpc/') && message === 'RPC function not found') return 'NAKAMA_URL'
  return null
}

/** A failure worth one more try for an idempotent request: unreachable, reset, or a 5xx. */
class Retryable extends Error {
  constructor(readonly refused: boolean) {
    super('retryable')
  }
}

function unwrap(err: unknown): unknown {
  return err instanceof Retryable ? backendUnavailable() : err
}
