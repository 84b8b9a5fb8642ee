import { setTimeout as sleep } from 'node:timers/promises'
import type { NakamaConfig } from '../../config.js'
import { logLine } from '../../log.js'
import type { Static, TSchema, Validator } from '../../typebox.js'
import { backendUnavailable, FIXES, misconfigured, NakamaError, NakamaMisconfigured, NakamaUnexpected, type NakamaAuth } from './errors.js'

/** One REST call's query, body and credentials, and what it may answer. */
export interface RequestOptions<T extends TSchema> {
  query?: Record<string, string>
  body?: unknown
  auth: NakamaAuth
  /** Safe to send twice: only these are retried after a network failure or a 5xx. */
  idempotent?: boolean
  /** The shape of a 2xx answer; any other is NakamaUnexpected. */
  answer: Validator<{}, T>
  /** Nakama's refusals the caller maps itself, thrown as NakamaError; any other is NakamaUnexpected. */
  expected?: (refusal: NakamaError) => boolean
}

/** Time limit and log of a NakamaClient. */
export interface ClientOptions {
  /** Limit of a whole exchange (the retry and the answer's body included); past it, 503. */
  timeoutMs?: number
  /** Where a misconfiguration's cause, or an unexpected answer, is logged (logLine when omitted). */
  log?: (entry: Record<string, unknown>) => void
}

/** 5 s: a healthy Nakama answers in milliseconds; a request past this is a hung node. */
const DEFAULT_TIMEOUT_MS = 5_000
/**
 * 1 MiB: the largest answer the module gives is a page of 100 records (no metadata) plus the
 * caller's, some 40 KB; even with 2 KiB of metadata a record it would stay under 400 KiB. Past the
 * cap the answer is dropped unread, so a broken proxy cannot fill the platform's memory.
 */
const MAX_ANSWER_BYTES = 1_048_576
/** One more try for reads, after this pause: enough to ride over a node restart or a dropped keep-alive socket. */
const RETRY_DELAY_MS = 150

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

  /** Send one request; resolves with the answer of the expected shape, throws NakamaError (an expected refusal) or 503. */
  async request<T extends TSchema>(method: string, path: string, options: RequestOptions<T>): Promise<Static<T>> {
    // One deadline for the whole exchange: both tries, and each answer's body as it is read.
    const signal = AbortSignal.timeout(this.#timeoutMs)
    try {
      return await this.#once(method, path, options, signal)
    } catch (err) {
      // A refused connection never reached Nakama, so even a write may be sent again.
      if (!(err instanceof Retryable) || !(options.idempotent || err.refused)) throw this.#unwrap(err, method, path)
      await sleep(RETRY_DELAY_MS)
      return this.#once(method, path, options, signal).catch((again: unknown) => {
        throw this.#unwrap(again, method, path)
      })
    }
  }

  /** Call a runtime RPC of nakama/modules/playfield.js with the HTTP key, JSON in and out (unwrap). */
  rpc<T extends TSchema>(id: string, payload: unknown, answer: Validator<{}, T>, { idempotent = false } = {}): Promise<Static<T>> {
    // `?unwrap` as nakama-api.md §1.9 writes it: the key present, with no value (URLSearchParams would write `unwrap=`).
    return this.request('POST', `/v2/rpc/${id}?unwrap`, { body: payload, auth: 'http', idempotent, answer })
  }

  /** Log an answer the platform cannot use, naming the call and its status, and give the 503 it becomes. */
  unexpected(request: string, status: number, problem: string): NakamaUnexpected {
    this.#refused(request, status, problem)
    return new NakamaUnexpected(request, status, problem)
  }

  /** The `nakama.refused` line: an answer an operator needs to know of (no keys or tokens in it). */
  #refused(request: string, status: number, problem: string): void {
    this.#log({ event: 'nakama.refused', request, status, problem })
  }

  /**
   * The 503 a failure ends as once no try is left. A 5xx is logged as an unexpected answer is, but
   * stays a plain 503: Nakama failing on its side (or a proxy while it restarts) is not a sign that
   * NAKAMA_URL names something else.
   */
  #unwrap(err: unknown, method: string, path: string): unknown {
    if (!(err instanceof Retryable)) return err
    if (err.status) this.#refused(`${method} ${path}`, err.status, 'failed on its side')
    return backendUnavailable()
  }

  async #once<T extends TSchema>(method: string, path: string, options: RequestOptions<T>, signal: AbortSignal): Promise<Static<T>> {
    const request = `${method} ${path}`
    const url = new URL(this.#base + path)
    for (const [k, v] of Object.entries(options.query ?? {})) url.searchParams.set(k, v)
    const auth = options.auth === 'server' ? this.#server : options.auth === 'http' ? this.#http : `Bearer ${options.auth.bearer}`
    let res: Response
    let text: string | null
    try {
      res = await fetch(url, {
        method,
        headers: { authorization: auth, 'content-type': 'application/json', accept: 'application/json' },
        body: options.body === undefined ? undefined : JSON.stringify(options.body),
        signal,
      })
      text = await readCapped(res)
    } catch (err) {
      // Past the deadline nothing is retried: it covers the whole exchange.
      if (signal.aborted) throw backendUnavailable()
      throw new Retryable((err as { cause?: { code?: unknown } }).cause?.code === 'ECONNREFUSED')
    }
    if (res.status >= 500) throw new Retryable(false, res.status)
    if (text === null) throw this.unexpected(request, res.status, `over ${MAX_ANSWER_BYTES} bytes`)
    let body: unknown = null
    try {
      body = text === '' ? {} : JSON.parse(text)
    } catch {
      if (res.ok) throw this.unexpected(request, res.status, 'not JSON')
    }
    if (res.ok) {
      if (options.answer.Check(body)) return body
      throw this.unexpected(request, res.status, 'not of the expected shape')
    }
    // Nakama's error body (nakama-api.md §1.0, §1.9); a proxy's page has none.
    const fields = (typeof body === 'object' && body !== null ? body : {}) as { code?: unknown; message?: unknown }
    const code = typeof fields.code === 'number' ? fields.code : 0
    const message = typeof fields.message === 'string' ? fields.message : res.statusText
    const variable = misconfigured(options.auth, path, res.status, message)
    if (variable) {
      this.#log({ event: 'nakama.misconfigured', variable, problem: message, status: res.status, request, expected: FIXES[variable] })
      throw new NakamaMisconfigured(variable, message)
    }
    // Aborted: the module gave up after its storage-version retries (contention); worth another try later.
    if (code === 10 && path.startsWith('/v2/rpc/')) throw backendUnavailable()
    // ResourceExhausted: Nakama (or a proxy before it) overloaded, whatever was asked; logged, as an
    // operator needs to know, and a plain 503 as for a Nakama out of reach (start-up goes on).
    if (res.status === 429) {
      this.#refused(request, res.status, message)
      throw backendUnavailable()
    }
    const refusal = new NakamaError(res.status, code, message)
    // Every refusal the caller does not map: logged, as an operator needs to know.
    if (code !== 0 && options.expected?.(refusal)) throw refusal
    throw this.unexpected(request, res.status, message)
  }
}

/**
 * The answer's text, or null once it passes MAX_ANSWER_BYTES (declared or counted): reading stops
 * there and the connection is dropped. Errors (the deadline's abort included) are the caller's.
 */
async function readCapped(res: Response): Promise<string | null> {
  if (Number(res.headers.get('content-length')) > MAX_ANSWER_BYTES) {
    await res.body?.cancel()
    return null
  }
  const chunks: Uint8Array[] = []
  let size = 0
  // Leaving the loop early cancels the stream, which closes the connection.
  for await (const chunk of res.body ?? []) {
    size += chunk.byteLength
    if (size > MAX_ANSWER_BYTES) return null
    chunks.push(chunk)
  }
  return Buffer.concat(chunks, size).toString('utf8')
}

/** A failure worth one more try for an idempotent request: unreachable, reset, or a 5xx (its `status`). */
class Retryable extends Error {
  constructor(
    readonly refused: boolean,
    readonly status = 0,
  ) {
    super('retryable')
  }
}
