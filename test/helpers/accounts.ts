import type { Test } from 'tap'
import { HttpError } from '../../lib/http/errors.js'
import path from 'node:path'
import Database from 'better-sqlite3'
import type { Client } from './platform.js'
import { countInNakama } from '../fake-nakama/env.js'

/** Assert a contract error: the status, JSON, and exactly `{error, code}` (plus `details` for 400 VALIDATION_FAILED). */
export async function expectError(
  t: Test,
  res: Response,
  status: number,
  code: string,
  label = `${status} ${code}`,
): Promise<Record<string, unknown>> {
  const body = (await res.json()) as Record<string, unknown>
  t.equal(res.status, status, `${label}: status`)
  t.match(res.headers.get('content-type'), /^application\/json/, `${label}: JSON`)
  t.equal(body.code, code, `${label}: code`)
  t.type(body.error, 'string', `${label}: error message`)
  const keys = Object.keys(body).sort()
  t.same(keys, code === 'VALIDATION_FAILED' && 'details' in body ? ['code', 'details', 'error'] : ['code', 'error'], `${label}: body keys`)
  return body
}

/** Assert that a backend call fails with the contract error `status` `code` (an HttpError), and return it. */
export async function expectRejection(t: Test, p: Promise<unknown>, status: number, code: string, message?: string): Promise<HttpError> {
  const err = await p.then(() => null, (e: unknown) => e)
  t.ok(err instanceof HttpError, `${code}: an HttpError`)
  t.match(err, { status, code }, message ?? `${status} ${code}`)
  return err as HttpError
}

/** Register `username` on `client` (which keeps the cookie) and return the user. */
export async function signUp(t: Test, client: Client, username: string, password = 'correct horse'): Promise<SessionBody['user']> {
  const res = await client.post('/api/auth/register', { username, password })
  const body = (await res.json()) as SessionBody
  t.equal(res.status, 200, `register ${username}`)
  return body.user
}

/** The body of GET /api/auth/session and of each sign-in. */
export interface SessionBody {
  success: boolean
  user: { id: string; username: string; roles: string[] }
}

/** Read-only queries on the platform's SQLite file, for asserting the state after a call. */
export function countRows(dataDir: string, sql: string, ...params: unknown[]): number {
  // TEST_BACKEND=nakama has no SQLite file: the fake Nakama of this DATA_DIR answers the same question.
  if (process.env.TEST_BACKEND === 'nakama') return countInNakama(dataDir, sql, ...params)
  const db = new Database(path.join(dataDir, 'playfield.sqlite'), { readonly: true, fileMustExist: true })
  try {
    return db.prepare(sql).pluck().get(...params) as number
  } finally {
    db.close()
  }
}

/** One row of a read-only query on the platform's SQLite file (embedded backend only), or undefined. */
export function readRow(dataDir: string, sql: string, ...params: unknown[]): unknown {
  const db = new Database(path.join(dataDir, 'playfield.sqlite'), { readonly: true, fileMustExist: true })
  try {
    return db.prepare(sql).get(...params)
  } finally {
    db.close()
  }
}

/** The decoded header and claims of a JWT (no signature check). */
export function decodeJwt(token: string): { header: Record<string, unknown>; claims: Record<string, unknown> } {
  const [header, claims] = token.split('.').slice(0, 2).map((part) => JSON.parse(Buffer.from(part, 'base64url').toString('utf8')))
  return { header, claims }
}

/** The session cookie's value as the client holds it. */
export function sessionOf(client: Client): string | undefined {
  return client.cookies.get('playfield_session')
}

/** Names outside the rule of PUT /api/user/username (CONTRACT §3), which register shares. */
export const BAD_NAMES: [string, unknown][] = [
  ['too short', 'ab'],
  ['too long (25)', 'a'.repeat(25)],
  ['leading underscore', '_abc'],
  ['leading dash', '-abc'],
  ['a space', 'ab c'],
  ['a dot', 'ab.c'],
  ['Cyrillic a look-alike', 'аlice'],
  ['fullwidth letters', 'ａｌｉｃｅ'],
  ['accented letter', 'josé'],
  ['NUL', 'abc\u0000'],
  ['newline', 'abc\n'],
  ['DEL', 'abc\u007f'],
  ['zero-width space', 'ab\u200bc'],
  ['__proto__', '__proto__'],
  ['emoji', 'abc😀'],
  ['empty', ''],
  ['a number', 12345],
  ['null', null],
  ['an array', ['alice']],
]
