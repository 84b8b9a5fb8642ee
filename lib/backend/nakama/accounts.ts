import { createHash, randomBytes, randomUUID } from 'node:crypto'
import { invalidCredentials, noSession, tooManyRenames, userNotFound, usernameTaken } from '../refusals.js'
import { logLine } from '../../log.js'
import type { Rule } from '../../limiter.js'
import type { TSchema } from '../../typebox.js'
import { MIN_TOKEN_LIFE_MS, type Account, type AccountPart, type BackendSession } from '../backend.js'
import { decodeClaims, toBackendSession, type Claims } from './claims.js'
import { AccountAnswer, AccountsAnswer, AnyAnswer, RenameAnswer, RoleAnswer, SessionAnswer, TimesAnswer } from './answers.js'
import type { NakamaClient, RequestOptions } from './client.js'
import { backendUnavailable, NakamaError } from './errors.js'
import { Revocations } from './revocations.js'

/** Synthetic e-mail domain: Nakama's username+password sign-in needs an e-mail account behind it. */
const EMAIL_DOMAIN = 'users.playfield.invalid'
/** Storage keys are VARCHAR(128); longer window keys are hashed. */
const MAX_KEY = 128
/** A session token this close to its expiry may have expired by the time Nakama reads it. */
const TOKEN_SKEW_MS = 5_000
/**
 * Guest names are drawn from 2^32: this many clashes in a row mean Nakama calls every name taken
 * (a proxy or a hook answering for it), and drawing again would go on without end.
 */
const GUEST_NAME_ATTEMPTS = 5
/** Nakama's answers to a login that are about the name or password: 400 refused as malformed, 401 wrong password, 403 banned, 404 unknown name. */
const CREDENTIAL_REFUSALS = new Set([400, 401, 403, 404])
/** Nakama's answers to a refresh that end the session: 401 invalid or expired, 403 banned, 404 deleted (nakama-api.md §1.2). */
const REFRESH_REFUSALS = new Set([401, 403, 404])

/**
 * The password Nakama stores (bcrypt, inside Nakama): a SHA-256 of the user's password. Nakama
 * counts bytes and bcrypt ignores bytes past 72, while the contract allows 256 characters: the
 * digest keeps every character significant and always passes Nakama's 8-character minimum.
 */
function nakamaPassword(password: string): string {
  return createHash('sha256').update(`playfield\u0000${password}`).digest('base64url')
}

function isTaken(err: unknown): err is NakamaError {
  // 409/6 at authenticate; 400/3 (message wrapped from v3.37) at PUT /v2/account (nakama-api.md §1.5).
  return err instanceof NakamaError && (err.status === 400 || err.status === 409) && err.message.includes('Username is already in use')
}

/** A sign-in or refresh call's own part: the server key and the Session answer are #signIn's. */
type SignIn = Pick<RequestOptions<TSchema>, 'query' | 'body' | 'expected'>

/** Said once per process: every token Nakama issues lives as long, so once is enough. */
let warnedShortTokens = false

/**
 * The platform cannot change Nakama's session.token_expiry_sec (default 60 s, nakama-api.md §2).
 * Below 5 minutes even a fresh token misses CONTRACT §3's promise for GET /api/auth/backend-token,
 * which then refreshes at every call and still answers a token that short: say what to raise.
 */
function checkLifetime(session: BackendSession, now: number): BackendSession {
  const leftMs = session.expiresAt - now
  if (leftMs < MIN_TOKEN_LIFE_MS && !warnedShortTokens) {
    warnedShortTokens = true
    logLine({
      event: 'nakama.short_tokens', tokenLifetimeSec: Math.round(leftMs / 1000), neededSec: MIN_TOKEN_LIFE_MS / 1000,
      fix: "raise Nakama's session.token_expiry_sec well above 300 (3600 recommended, README: Configuration notes)",
    })
  }
  return session
}

/** Sign-in, sessions, accounts, roles and limiter buckets on Nakama accounts and storage. */
export class NakamaAccounts implements AccountPart {
  readonly #revocations: Revocations
  constructor(readonly client: NakamaClient, readonly now: () => number = Date.now) {
    this.#revocations = new Revocations(client)
  }

  /** Nakama's Session from a sign-in or refresh call with the server key; its tokens must be readable. */
  async #signIn(path: string, options: SignIn): Promise<BackendSession> {
    const session = toBackendSession(await this.client.request('POST', path, { ...options, auth: 'server', answer: SessionAnswer }))
    if (!session) throw this.client.unexpected(`POST ${path}`, 200, 'a session without readable tokens')
    return checkLifetime(session, this.now())
  }

  /** A custom-id account named like the embedded backend's guests; a name collision draws again. */
  async authenticateGuest(): Promise<BackendSession> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.#signIn('/v2/account/authenticate/custom', {
          query: { create: 'true', username: `guest-${randomBytes(4).toString('hex')}` },
          body: { id: `playfield-guest-${randomUUID()}` },
          expected: isTaken,
        })
      } catch (err) {
        if (!isTaken(err)) throw err
        if (attempt === GUEST_NAME_ATTEMPTS) {
          logLine({ event: 'nakama.refused', request: 'guest', status: err.status, problem: `${GUEST_NAME_ATTEMPTS} random guest names in a row were called taken` })
          throw backendUnavailable()
        }
      }
    }
  }

  async register(username: string, password: string): Promise<BackendSession> {
    try {
      return await this.#signIn('/v2/account/authenticate/email', {
        query: { create: 'true', username },
        body: { email: `${randomUUID()}@${EMAIL_DOMAIN}`, password: nakamaPassword(password) },
        expected: isTaken,
      })
    } catch (err) {
      throw isTaken(err) ? usernameTaken(username) : err
    }
  }

  /** Nakama's username+password path: an e-mail request without `email` (nakama-api.md §1.1). */
  async login(username: string, password: string): Promise<BackendSession> {
    try {
      // Any other answer (a proxy's 413, an overloaded Nakama's 429) says nothing of the password:
      // the client makes it 503, the user may try again, and it is not counted as a failed sign-in.
      return await this.#signIn('/v2/account/authenticate/email', {
        query: { create: 'false', username }, body: { password: nakamaPassword(password) },
        expected: (refusal) => CREDENTIAL_REFUSALS.has(refusal.status),
      })
    } catch (err) {
      // One answer for all, which says nothing of which it was.
      throw err instanceof NakamaError ? invalidCredentials() : err
    }
  }

  /**
   * Refresh keeps the token id and re-reads the username, so a renamed user gets the new name. A
   * login Nakama will not renew (its refresh token invalid, the account banned or deleted) ends the
   * platform's session too, on every instance, as a logout does: otherwise the cookie would still
   * sign its user in and submit scores while its game-backend token could never be had again.
   */
  async refresh(refreshToken: string): Promise<BackendSession> {
    const claims = await this.#activeClaims(refreshToken)
    if (!claims) throw noSession()
    try {
      return await this.#signIn('/v2/account/session/refresh', { body: { token: refreshToken }, expected: (refusal) => REFRESH_REFUSALS.has(refusal.status) })
    } catch (err) {
      if (!(err instanceof NakamaError)) throw err
      // Nakama's refusal stands even if the revocation cannot be stored now; the next refresh tries again.
      await this.#revocations.revoke({ ...claims, token: undefined, refreshToken }).catch(() => undefined)
      throw noSession()
    }
  }

  async sessionActive(refreshToken: string, userId: string): Promise<boolean> {
    return (await this.#activeClaims(refreshToken))?.uid === userId
  }

  async sessionEnded(refreshToken: string, userId: string): Promise<boolean> {
    // Nakama's refresh gives a new refresh token a new expiry (refresh_token_expiry_sec, an hour by
    // default) under the same tid: this one's expiry says nothing of the session. Its logout is
    // kept by tid (nakama-api.md §1.3), and so is the end of an account deleted or banned since.
    const claims = decodeClaims(refreshToken)
    return !claims || claims.uid !== userId || (await this.#revocations.isRevoked(claims.uid, claims.tid, claims.exp, this.now()))
  }

  /** The refresh token's claims while it is unexpired and not revoked; else null. */
  async #activeClaims(refreshToken: string): Promise<Claims | null> {
    const claims = decodeClaims(refreshToken)
    const now = this.now()
    if (!claims || claims.exp * 1000 <= now) return null
    return (await this.#revocations.isRevoked(claims.uid, claims.tid, claims.exp, now)) ? null : claims
  }

  /** Revoke in storage (every instance, survives Nakama restarts), then in Nakama's own cache. */
  async logout(session: { token: string; refreshToken: string }): Promise<void> {
    const claims = decodeClaims(session.refreshToken)
    if (!claims) return
    // Nakama's logout fails as a whole on an expired session token and then invalidates nothing
    // (nakama-api.md §1.3, §2): the session token goes along only while it is still valid.
    const access = decodeClaims(session.token)
    const live = access !== null && access.exp * 1000 > this.now() + TOKEN_SKEW_MS
    await this.#revocations.revoke({ ...claims, token: live ? session.token : undefined, refreshToken: session.refreshToken })
    if (!live) return
    await this.client
      // Nakama's blacklist is per node (nakama-api.md §1.3): the module's revoke logged the token out
      // on the node that ran it; this reaches the node the balancer picks now, and is refused (401
      // "Auth token invalid") when that is the same node, as it always is with one node.
      .request('POST', '/v2/session/logout', { body: { token: session.token, refresh_token: session.refreshToken }, auth: { bearer: session.token }, answer: AnyAnswer, expected: () => true })
      .catch(() => undefined) // the storage record already ends the session; this is Nakama's in-memory copy
  }

  async getAccount(userId: string): Promise<Account | null> {
    return (await this.client.rpc('playfield_get_account', { userId }, AccountAnswer, { idempotent: true })).account
  }

  /** One module call: bucket taken with a storage-version check, rename, token given back if refused. */
  async renameUser(userId: string, username: string, rule: Rule, now: number): Promise<Account> {
    const out = await this.client.rpc('playfield_rename', { userId, username, rule, now }, RenameAnswer)
    if ('account' in out) return out.account
    if (out.error === 'USERNAME_TAKEN') throw usernameTaken(username)
    if (out.error === 'RATE_LIMITED') throw tooManyRenames(out.waitMs)
    throw noSession()
  }

  async eventWindow(key: string, now: number, windowMs: number, record?: { keep: number }): Promise<number[]> {
    const stored = key.length > MAX_KEY ? createHash('sha256').update(key).digest('hex') : key
    const out = await this.client.rpc('playfield_event_window', { key: stored, now, windowMs, keep: record?.keep ?? 0, record: record !== undefined }, TimesAnswer)
    return out.times
  }

  grantRole(username: string, role: string): Promise<Account> {
    return this.#setRole(username, role, true)
  }

  revokeRole(username: string, role: string): Promise<Account> {
    return this.#setRole(username, role, false)
  }

  async listPrivileged(): Promise<Account[]> {
    return (await this.client.rpc('playfield_list_privileged', {}, AccountsAnswer, { idempotent: true })).accounts
  }

  async #setRole(username: string, role: string, grant: boolean): Promise<Account> {
    const out = await this.client.rpc('playfield_set_role', { username, role, grant }, RoleAnswer)
    if (!('account' in out)) throw userNotFound(username)
    return out.account
  }
}
