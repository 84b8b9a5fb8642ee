import { randomUUID } from 'node:crypto'
import type Database from 'better-sqlite3'
import type { BackendSession } from '../backend.js'
import { signToken, verifyToken, type TokenClaims } from './tokens.js'

/** Session tokens live an hour (the platform refreshes them when under 5 minutes are left). */
const SESSION_TOKEN_TTL_MS = 3_600_000
/** Refresh tokens live 30 days from sign-in; refreshing does not extend them, signing in again does. */
const REFRESH_TOKEN_TTL_MS = 30 * 86_400_000

const MAX_CACHED_REVOCATIONS = 100_000
/** How often a logout also deletes the revocations whose tokens have all expired. */
const PURGE_INTERVAL_MS = 3_600_000

/** The HS256 keys: session tokens and refresh tokens are signed with different keys (as Nakama does). */
interface TokenKeys {
  session: readonly string[]
  refresh: readonly string[]
}

/**
 * Issues, refreshes and revokes game-backend sessions with Nakama's token semantics
 * (nakama-api.md §1.2, §1.3, §2). Unlike Nakama, a revocation is stored in SQLite, so it
 * survives a restart and every platform process on the same file sees it.
 */
export class SessionIssuer {
  // Revoked token ids already seen: a revoked cookie that keeps coming back costs no query.
  readonly #revoked = new Set<string>()
  readonly #isRevoked: Database.Statement<[string], number>
  readonly #revoke: Database.Statement<[string, number]>
  readonly #purge: Database.Statement<[number]>
  #purgedAt: number

  constructor(db: Database.Database, readonly keys: TokenKeys, readonly clock: () => number) {
    this.#isRevoked = db.prepare<[string], number>('SELECT 1 FROM revoked_sessions WHERE tid = ?').pluck()
    this.#revoke = db.prepare('INSERT OR IGNORE INTO revoked_sessions (tid, revoked_at) VALUES (?, ?)')
    // Every refresh token of a tid expires at most REFRESH_TOKEN_TTL_MS after the tid was revoked.
    this.#purge = db.prepare('DELETE FROM revoked_sessions WHERE revoked_at < ?')
    this.#purgedAt = clock()
    this.#purge.run(this.#purgedAt - REFRESH_TOKEN_TTL_MS)
    const recent = db.prepare('SELECT tid FROM revoked_sessions ORDER BY revoked_at DESC LIMIT ?').pluck().all(MAX_CACHED_REVOCATIONS) as string[]
    for (const tid of recent) this.#remember(tid)
  }

  /** A new session (new tid) for the account. */
  issue(account: { id: string; username: string }): BackendSession {
    const now = this.clock()
    const iat = Math.floor(now / 1000)
    const refreshExp = Math.floor((now + REFRESH_TOKEN_TTL_MS) / 1000)
    return this.#sign({ tid: randomUUID(), uid: account.id, usn: account.username, exp: refreshExp, iat }, now)
  }

  /** The claims of a good refresh token (signature, expiry, not revoked), else null. */
  check(refreshToken: string): TokenClaims | null {
    const claims = verifyToken(refreshToken, this.keys.refresh, this.clock())
    if (!claims || this.#revokedTid(claims.tid)) return null
    return claims
  }

  /** New tokens for the same tid, iat and refresh expiry, carrying the account's current name. */
  refresh(claims: TokenClaims, username: string): BackendSession {
    return this.#sign({ ...claims, usn: username }, this.clock())
  }

  /** Revoke the tids of the given tokens (a token with a bad signature names nothing). */
  revoke(tokens: { token: string; refreshToken: string }): void {
    // Checked as of time 0: an expired token still names its tid, so logging out with an
    // expired session token revokes its refresh token too.
    const tids = new Set<string>()
    const fromRefresh = verifyToken(tokens.refreshToken, this.keys.refresh, 0)
    const fromSession = verifyToken(tokens.token, this.keys.session, 0)
    if (fromRefresh) tids.add(fromRefresh.tid)
    if (fromSession) tids.add(fromSession.tid)
    const now = this.clock()
    for (const tid of tids) {
      this.#revoke.run(tid, now)
      this.#remember(tid)
    }
    // Not only at start: a platform that runs for months would keep every logout's row.
    if (now - this.#purgedAt >= PURGE_INTERVAL_MS) {
      this.#purgedAt = now
      this.#purge.run(now - REFRESH_TOKEN_TTL_MS)
    }
  }

  #revokedTid(tid: string): boolean {
    if (this.#revoked.has(tid)) return true
    // Another platform process (or this one before a restart) may have revoked it: ask the file.
    if (this.#isRevoked.get(tid) === undefined) return false
    this.#remember(tid)
    return true
  }

  #remember(tid: string): void {
    // The set is only a cache in front of the table: start over rather than grow without bound.
    if (this.#revoked.size >= MAX_CACHED_REVOCATIONS) this.#revoked.clear()
    this.#revoked.add(tid)
  }

  #sign(refreshClaims: TokenClaims, now: number): BackendSession {
    // Always a full hour (as Nakama does), so /api/auth/backend-token can keep its 5-minute promise
    // even in the refresh token's last minutes.
    const exp = Math.floor((now + SESSION_TOKEN_TTL_MS) / 1000)
    const token = signToken({ ...refreshClaims, exp }, this.keys.session[0]!)
    const refreshToken = signToken(refreshClaims, this.keys.refresh[0]!)
    return { token, refreshToken, userId: refreshClaims.uid, username: refreshClaims.usn, expiresAt: exp * 1000 }
  }
}
