import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto'
import { Compile, Type } from '../typebox.js'
import { decodeCanonical } from '../signed.js'

/** What the session cookie carries (CONTRACT §2): enough for any platform instance to serve the user. */
export interface SessionState {
  /** Backend user id and name (the name is updated by a rename). */
  uid: string
  usn: string
  /** Game-backend refresh token: checked on every request, revoked by logout. */
  rt: string
  /** Game-backend session token and its expiry (Unix ms), answered by /api/auth/backend-token. */
  t: string
  te: number
  /** When the cookie was first issued and when it stops being accepted (Unix ms): the refresh token's expiry. */
  iat: number
  exp: number
}

const State = Compile(
  Type.Object({
    uid: Type.String(),
    usn: Type.String(),
    rt: Type.String(),
    t: Type.String(),
    te: Type.Integer(),
    iat: Type.Integer(),
    exp: Type.Integer(),
  }),
)

const IV_BYTES = 12
const TAG_BYTES = 16
// Binds a sealed value to its use: a blob sealed for one of them with the same secret does not open as the other.
const CONTEXT = Buffer.from('playfield_session v1')
const REFERENCE_CONTEXT = Buffer.from('playfield_terminal_session v1')
// Browsers keep cookies up to 4096 bytes; anything longer was not made here.
const MAX_SEALED_CHARS = 4096

/** AES-256-GCM keys derived (HKDF-SHA256) from the SESSION_SECRET list: the first seals, all open. */
export function sealKeys(secrets: readonly string[]): Buffer[] {
  return secrets.map((secret) => Buffer.from(hkdfSync('sha256', secret, 'playfield', CONTEXT, 32)))
}

/** Encrypt and authenticate `state` with the first key: base64url(iv | ciphertext | tag). */
export function seal(state: SessionState, keys: readonly Buffer[]): string {
  return sealText(JSON.stringify(state), keys, CONTEXT)
}

/**
 * The state in `sealed` when one of `keys` authenticates it, it is well-formed and it has not
 * expired at `now`; null for anything else (tampered, truncated, garbage, a retired key). Never throws.
 */
export function unseal(sealed: string, keys: readonly Buffer[], now: number): SessionState | null {
  const state = openJson(sealed, keys, CONTEXT)
  return State.Check(state) && state.exp > now ? state : null
}

/** Which session a terminal ticket was minted in: its user and its refresh token. */
export interface SessionReference {
  uid: string
  rt: string
}

const Reference = Compile(Type.Object({ uid: Type.String(), rt: Type.String() }))

/**
 * A session's reference sealed for a terminal ticket, which the page's script sees: the refresh
 * token stays as unreadable there as in the HttpOnly cookie, and the blob opens as nothing else.
 */
export function sealReference(reference: SessionReference, keys: readonly Buffer[]): string {
  return sealText(JSON.stringify({ uid: reference.uid, rt: reference.rt }), keys, REFERENCE_CONTEXT)
}

/** The reference in `sealed`, or null (as unseal). */
export function unsealReference(sealed: string, keys: readonly Buffer[]): SessionReference | null {
  const reference = openJson(sealed, keys, REFERENCE_CONTEXT)
  return Reference.Check(reference) ? reference : null
}

function sealText(text: string, keys: readonly Buffer[], context: Buffer): string {
  const iv = randomBytes(IV_BYTES)
  const cipher = createCipheriv('aes-256-gcm', keys[0]!, iv)
  cipher.setAAD(context)
  const body = Buffer.concat([cipher.update(text, 'utf8'), cipher.final()])
  return Buffer.concat([iv, body, cipher.getAuthTag()]).toString('base64url')
}

/** The JSON value sealed in `sealed` for `context` under one of `keys`; undefined when none opens it. */
function openJson(sealed: string, keys: readonly Buffer[], context: Buffer): unknown {
  if (sealed.length > MAX_SEALED_CHARS || !/^[A-Za-z0-9_-]+$/.test(sealed)) return undefined
  // Only the canonical encoding: the spare bits of the last character must not give a second spelling.
  const raw = decodeCanonical(sealed)
  if (raw === null || raw.length <= IV_BYTES + TAG_BYTES) return undefined
  const iv = raw.subarray(0, IV_BYTES)
  const body = raw.subarray(IV_BYTES, raw.length - TAG_BYTES)
  const tag = raw.subarray(raw.length - TAG_BYTES)
  for (const key of keys) {
    const text = decrypt(key, iv, body, tag, context)
    if (text === null) continue
    try {
      return JSON.parse(text) as unknown
    } catch {
      return undefined
    }
  }
  return undefined
}

function decrypt(key: Buffer, iv: Buffer, body: Buffer, tag: Buffer, context: Buffer): string | null {
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES })
    decipher.setAAD(context)
    decipher.setAuthTag(tag)
    return Buffer.concat([decipher.update(body), decipher.final()]).toString('utf8')
  } catch {
    return null
  }
}
