import type { BackendSession } from '../backend.js'
import { decodeJsonPart } from '../../signed.js'

/** The claims of a Nakama session or refresh token the platform reads (nakama-api.md §2). */
export interface Claims {
  tid: string
  uid: string
  usn: string
  /** Unix seconds. */
  exp: number
}

/**
 * Read a Nakama JWT's claims without verifying it: the platform does not hold Nakama's keys, and the
 * tokens it reads come from Nakama itself or from the sealed session cookie. Null when malformed.
 */
export function decodeClaims(token: string): Claims | null {
  const c = decodeJsonPart(token.split('.')[1])
  if (!c || typeof c.tid !== 'string' || typeof c.uid !== 'string' || typeof c.exp !== 'number') return null
  return { tid: c.tid, uid: c.uid, usn: typeof c.usn === 'string' ? c.usn : '', exp: c.exp }
}

/** Nakama's Session answer ({token, refresh_token}, `created` absent when false) as a BackendSession; null when a token is unreadable. */
export function toBackendSession(session: { token: string; refresh_token: string }): BackendSession | null {
  const claims = decodeClaims(session.token)
  if (!claims || !decodeClaims(session.refresh_token)) return null
  return { token: session.token, refreshToken: session.refresh_token, userId: claims.uid, username: claims.usn, expiresAt: claims.exp * 1000 }
}
