import { createHmac, timingSafeEqual } from 'node:crypto'

/** Nakama's session claims (nakama-api.md §2); claims without a value are left out. */
export interface Claims {
  tid: string
  uid: string
  usn: string
  vrs?: Record<string, string>
  exp: number
  iat?: number
}

const HEADER = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT' })).toString('base64url')

/** Sign `claims` with HS256, as Nakama's generateTokenWithExpiry does. */
export function signToken(claims: Claims, key: string): string {
  const body = `${HEADER}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`
  return `${body}.${createHmac('sha256', key).update(body).digest('base64url')}`
}

/** The claims when the signature holds with `key`, the algorithm is HS256 and `exp` is ahead; else null. */
export function verifyToken(token: string, key: string, nowSec: number): Claims | null {
  const parts = token.split('.')
  if (parts.length !== 3) return null
  const [header, payload, signature] = parts as [string, string, string]
  const expected = createHmac('sha256', key).update(`${header}.${payload}`).digest()
  const given = Buffer.from(signature, 'base64url')
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null
  try {
    if (JSON.parse(Buffer.from(header, 'base64url').toString()).alg !== 'HS256') return null
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as Claims
    if (typeof claims.exp !== 'number' || claims.exp <= nowSec) return null
    return claims
  } catch {
    return null
  }
}
