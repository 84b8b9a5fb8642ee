import { createHmac, timingSafeEqual } from 'node:crypto'

// What the game-backend tokens (HS256 JWTs) and the terminal tickets share: base64url JSON parts
// and an HMAC-SHA256 signature checked against every key of a rotation.

/** The HMAC-SHA256 of `data` under `key`. */
export function sign(key: string, data: string): Buffer {
  return createHmac('sha256', key).update(data).digest()
}

/**
 * Whether `signature` is the base64url HMAC-SHA256 of `data` under one of `keys` (while a key is
 * rotated out, all verify). The text is compared, not what it decodes to: Node's base64url decoding
 * skips characters outside the alphabet and ignores the last character's spare bits, so a
 * signature with `!!` appended or its last character changed decoded to the right bytes and passed.
 */
export function signedByOneOf(keys: readonly string[], data: string, signature: string): boolean {
  const given = Buffer.from(signature)
  return keys.some((key) => {
    const expected = Buffer.from(sign(key, data).toString('base64url'))
    return expected.length === given.length && timingSafeEqual(expected, given)
  })
}

/**
 * The bytes `text` encodes when it is base64url as an encoder writes it (with its `=` padding too,
 * where `padded` allows it); null for any other spelling. Node's decoding drops a stray last
 * character and ignores the last one's spare bits, so other strings would decode to the same bytes.
 */
export function decodeCanonical(text: string, padded = false): Buffer | null {
  const bytes = Buffer.from(text, 'base64url')
  const canonical = bytes.toString('base64url')
  if (text === canonical) return bytes
  return padded && text === canonical.padEnd(Math.ceil(canonical.length / 4) * 4, '=') ? bytes : null
}

/**
 * A base64url JSON part (a JWT's header or payload, a ticket's claims) as an object; null when it
 * is missing, no JSON or no object. It reads; checking the signature is the caller's job.
 */
export function decodeJsonPart(part: string | undefined): Record<string, unknown> | null {
  if (part === undefined) return null
  try {
    const value: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'))
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null
  } catch {
    return null
  }
}
