import { decodeJsonPart, sign, signedByOneOf } from '../../signed.js'
import { Compile, Type } from '../../typebox.js'

/** The claims of a game-backend token, named as Nakama names them (nakama-api.md §2). */
export interface TokenClaims {
  /** Token id (UUID v4); a session token and its refresh tokens share it, and logout revokes it. */
  tid: string
  /** User id. */
  uid: string
  /** Username at issue time. */
  usn: string
  /** Expiry, Unix seconds. */
  exp: number
  /** Issued at, Unix seconds (Nakama 3.25+). */
  iat: number
}

const Claims = Compile(Type.Object({ tid: Type.String(), uid: Type.String(), usn: Type.String(), exp: Type.Integer(), iat: Type.Integer() }))

// Nakama's header, byte for byte, so a front-end's JWT reader sees what it sees from Nakama.
const HEADER = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT' })).toString('base64url')

/** Sign `claims` as an HS256 JWT with `key`. */
export function signToken(claims: TokenClaims, key: string): string {
  const body = `${HEADER}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`
  return `${body}.${sign(key, body).toString('base64url')}`
}

/**
 * The claims of `token` when its signature matches one of `keys` (HS256 only), its claims have
 * the right types and it has not expired at `nowMs`; null otherwise. Never throws.
 */
export function verifyToken(token: string, keys: readonly string[], nowMs: number): TokenClaims | null {
  if (token.length > 4096) return null
  const parts = token.split('.')
  if (parts.length !== 3) return null
  const [header, payload, signature] = parts as [string, string, string]
  const body = `${header}.${payload}`
  if (!signedByOneOf(keys, body, signature)) return null
  // The signature holds, so the header is ours; still refuse anything but HS256 (alg confusion).
  const head = decodeJsonPart(header)
  if (!head || head.alg !== 'HS256') return null
  const claims = decodeJsonPart(payload)
  if (!Claims.Check(claims)) return null
  if (claims.exp * 1000 <= nowMs) return null
  return { tid: claims.tid, uid: claims.uid, usn: claims.usn, exp: claims.exp, iat: claims.iat }
}
