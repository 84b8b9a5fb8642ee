import { createHash } from 'node:crypto'
import { brotliCompressSync, gzipSync, constants } from 'node:zlib'

/** One encoding of a response: its bytes, its strong ETag and its Content-Encoding. */
export interface Variant {
  readonly body: Buffer
  /** Quoted strong ETag; each encoding has its own, as RFC 9110 §8.8.3 asks of different bytes. */
  readonly etag: string
  readonly encoding: 'identity' | 'gzip' | 'br'
}

/** A JSON response serialized once into bytes, with its compressed variants. */
export interface Representation {
  readonly identity: Variant
  /** The identity variant again when gzip would not be smaller. */
  readonly gzip: Variant
  readonly br: Variant
  /** Opaque tags (no quotes, no W/) of every variant: a validator of any of them means "unchanged". */
  readonly tags: ReadonlySet<string>
  /** When the bytes stop being true (a detail's earliest nextResetAt), epoch ms; Infinity for never. */
  readonly expiresAt: number
}

/**
 * Brotli's best quality (11) costs ~5 ms even for a 3 KB detail and ~1 ms per 10 KB beyond: the
 * list of a normal catalogue gets it; details, and the list of a generated catalogue of thousands,
 * get quality 5 (a few percent larger) so start-up with 1,000 games stays under a second.
 */
const BEST_BELOW_BYTES = 256 * 1024

/** Serialize `value` as JSON and compress it both ways; done once per catalogue load. */
export function represent(value: unknown, options: { best?: boolean; expiresAt?: number } = {}): Representation {
  const body = Buffer.from(JSON.stringify(value))
  const best = options.best === true && body.length < BEST_BELOW_BYTES
  const hash = createHash('sha256').update(body).digest('base64url').slice(0, 27)
  const identity: Variant = { body, etag: `"${hash}"`, encoding: 'identity' }
  const gz = gzipSync(body, { level: best ? 9 : 6 })
  const br = brotliCompressSync(body, {
    params: {
      [constants.BROTLI_PARAM_QUALITY]: best ? 11 : 5,
      [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
      [constants.BROTLI_PARAM_SIZE_HINT]: body.length,
    },
  })
  const gzip: Variant = gz.length < body.length ? { body: gz, etag: `"${hash}-gzip"`, encoding: 'gzip' } : identity
  const brotli: Variant = br.length < body.length ? { body: br, etag: `"${hash}-br"`, encoding: 'br' } : identity
  const tags = new Set([identity, gzip, brotli].map((v) => v.etag.slice(1, -1)))
  return { identity, gzip, br: brotli, tags, expiresAt: options.expiresAt ?? Infinity }
}
