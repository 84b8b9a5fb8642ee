import { createHash } from 'node:crypto'
import { brotliCompressSync, gzipSync, constants } from 'node:zlib'

/** One encoding of a response: its bytes, its strong ETag and its Content-Encoding. */
export interface Variant {
  readonly body: Buffer
  /** The body's length as the Content-Length value. */
  readonly length: string
  /** Quoted strong ETag; each encoding has its own, as RFC 9110 §8.8.3 asks of different bytes. */
  readonly etag: string
  readonly encoding: 'identity' | 'gzip' | 'br'
}

interface RepresentationOptions {
  /** Compress at the best levels (below 256 KiB). */
  best?: boolean
  /** Compress both variants now rather than at the first request for each. */
  eager?: boolean
  expiresAt?: number
}

/**
 * Brotli's best quality (11) costs ~5 ms even for a 3 KB body and ~1 ms per 10 KB beyond: the list
 * of a normal catalogue gets it; details and the list of a generated catalogue of thousands get
 * quality 5 (a few percent larger).
 */
const BEST_BELOW_BYTES = 256 * 1024

/**
 * A response's bytes, made once (a JSON answer per catalogue load, a file of the terminal page per
 * process), with a strong ETag and gzip and brotli variants. `eager` compresses at once (the
 * list); otherwise each variant is compressed by the first request that asks for it and kept
 * (details: compressing 1,000 of them at load would take most of the one-second start-up budget,
 * and most are rarely asked for in every encoding).
 */
export class Representation {
  readonly identity: Variant
  /** Opaque tags (no quotes, no W/) of every variant: a validator of any of them means "unchanged". */
  readonly tags: ReadonlySet<string>
  /** When the bytes stop being true (a detail's earliest nextResetAt), epoch ms; Infinity for never. */
  readonly expiresAt: number
  readonly #best: boolean
  readonly #hash: string
  #gzip: Variant | undefined
  #br: Variant | undefined

  /** A JSON value's representation. */
  static json(value: unknown, options: RepresentationOptions = {}): Representation {
    return new Representation(Buffer.from(JSON.stringify(value)), options)
  }

  constructor(body: Buffer, options: RepresentationOptions = {}) {
    this.#best = options.best === true && body.length < BEST_BELOW_BYTES
    this.#hash = createHash('sha256').update(body).digest('base64url').slice(0, 27)
    this.identity = { body, length: String(body.length), etag: `"${this.#hash}"`, encoding: 'identity' }
    this.tags = new Set([this.#hash, `${this.#hash}-gzip`, `${this.#hash}-br`])
    this.expiresAt = options.expiresAt ?? Infinity
    if (options.eager) void [this.gzip, this.br]
  }

  /** The gzip variant, or identity when gzip would not be smaller. */
  get gzip(): Variant {
    return (this.#gzip ??= this.#variant('gzip', gzipSync(this.identity.body, { level: this.#best ? 9 : 6 })))
  }

  /** The brotli variant, or identity when brotli would not be smaller. */
  get br(): Variant {
    const body = this.identity.body
    return (this.#br ??= this.#variant(
      'br',
      brotliCompressSync(body, {
        params: {
          [constants.BROTLI_PARAM_QUALITY]: this.#best ? 11 : 5,
          [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
          [constants.BROTLI_PARAM_SIZE_HINT]: body.length,
        },
      }),
    ))
  }

  #variant(encoding: 'gzip' | 'br', compressed: Buffer): Variant {
    if (compressed.length >= this.identity.body.length) return this.identity
    return { body: compressed, length: String(compressed.length), etag: `"${this.#hash}-${encoding}"`, encoding }
  }
}
