import type { Operator, SortOrder } from '../leaderboard.js'
import type { Rule } from '../limiter.js'

/** CONTRACT §3: a backend token is answered with at least this long to live. */
export const MIN_TOKEN_LIFE_MS = 5 * 60_000

/**
 * The game-backend seam. The platform's routes call only this; the embedded backend (SQLite) and
 * the Nakama backend implement it. Shaped after Nakama's API (../shared/nakama-api.md): sign-in
 * returns a session token and a refresh token, records follow Nakama's operators and ranks.
 * Errors are HttpErrors with the contract's codes (USERNAME_TAKEN, INVALID_CREDENTIALS,
 * NO_SESSION, LEADERBOARD_NOT_FOUND, USER_NOT_FOUND, VALIDATION_FAILED, BACKEND_UNAVAILABLE,
 * RATE_LIMITED).
 */
export interface Backend {
  readonly kind: 'embedded' | 'nakama'

  /** Create a guest account and sign it in (Nakama: authenticate/custom with a random id). */
  authenticateGuest(): Promise<BackendSession>
  /**
   * Create an account with a password (NFC, as the platform passes every password) and sign it in;
   * 409 USERNAME_TAKEN when the name is taken. `signal` is the client's connection: once it has
   * closed, work not yet begun may be skipped with 499 CLIENT_CLOSED (the embedded backend's
   * password hash waiting for its turn; Nakama hashes on its own side and is always asked).
   */
  register(username: string, password: string, signal?: AbortSignal): Promise<BackendSession>
  /** Sign in with a password; 401 INVALID_CREDENTIALS when the name or password is wrong. `signal` as for register. */
  login(username: string, password: string, signal?: AbortSignal): Promise<BackendSession>
  /** New session token (and refresh token) from a refresh token; 401 NO_SESSION when it is revoked or expired. */
  refresh(refreshToken: string): Promise<BackendSession>
  /**
   * Whether a refresh token is still good (signature, expiry, not revoked) and is `userId`'s;
   * checked on every request, so a cookie names only the account its token was issued to.
   */
  sessionActive(refreshToken: string, userId: string): Promise<boolean>
  /**
   * Whether the session a refresh token was issued in is over for good: logged out (or ended as
   * a logout is), not `userId`'s, or past the end no refresh extends. A refresh token that has
   * only expired while its session lives on in a newer one (Nakama's sliding refresh) is not.
   * The platform asks this about an open terminal's ticket (POST /dev/terminal/access).
   */
  sessionEnded(refreshToken: string, userId: string): Promise<boolean>
  /** Revoke the session the refresh token belongs to, and only that one. */
  logout(session: { token: string; refreshToken: string }): Promise<void>

  /** The account with its roles, read fresh (roles work at once); null when unknown. */
  getAccount(userId: string): Promise<Account | null>
  /**
   * Rename a user, spending one token of the user's rename bucket only when the rename is accepted.
   * The bucket read, the take, the rename and the bucket write are one atomic step.
   * Throws 409 USERNAME_TAKEN or 429 RATE_LIMITED (with the wait); nothing is written then.
   */
  renameUser(userId: string, username: string, rule: Rule, now: number): Promise<Account>
  /**
   * The times (ms, oldest first) of the named window's events younger than `windowMs` at `now`,
   * kept in the backend so every platform instance and restart sees them (the sign-in limit's
   * failures). With `record`, `now` is added first, and only the latest `keep` are kept. Times
   * more than `windowMs` later than `now` are dropped: a clock stepped back since (instances'
   * clocks differ by less), whose events must neither count for as long as the step nor, as the
   * latest, crowd out the events recorded now.
   */
  eventWindow(key: string, now: number, windowMs: number, record?: { keep: number }): Promise<number[]>

  /** Add or remove a role on the account named `username` (exact name, or ignoring case on embedded). */
  grantRole(username: string, role: string): Promise<Account>
  revokeRole(username: string, role: string): Promise<Account>
  /** Accounts holding at least one role, for `bin/platform users list`. */
  listPrivileged(): Promise<Account[]>

  /** Record a launched game session. */
  recordLaunch(launch: Launch): Promise<void>

  /**
   * Make every leaderboard exist with its resolved configuration (at start and on catalogue reload).
   * `wait: false` (a retry): refuse at once rather than wait for a lock another process holds.
   */
  syncLeaderboards(boards: LeaderboardConfig[], options?: { wait?: boolean }): Promise<void>
  /** Write a score for a user with the leaderboard's operator (Nakama semantics, CONTRACT §3). */
  writeRecord(write: RecordWrite, now: number): Promise<LeaderboardRecord>
  /** A page of the current period's records in rank order, plus the owner's own record when ranked. */
  listRecords(query: RecordQuery, now: number): Promise<RecordPage>

  /** Release connections and files. */
  close(): Promise<void>
}

/**
 * Whether an event at `time` counts in a window of `windowMs` at `now` (Backend.eventWindow): younger
 * than the window, and not more than the window ahead (stamped before the clock was stepped back).
 */
export function inWindow(time: number, now: number, windowMs: number): boolean {
  return time > now - windowMs && time <= now + windowMs
}

type LeaderboardMethod = 'recordLaunch' | 'syncLeaderboards' | 'writeRecord' | 'listRecords'
/** The account half of a backend: sign-in, sessions, accounts, roles and buckets. */
export type AccountPart = Omit<Backend, 'kind' | 'close' | LeaderboardMethod>
/** The leaderboard half of a backend: launches and records. */
export type LeaderboardPart = Pick<Backend, LeaderboardMethod>

/** Runs one call of the account half; the embedded backend turns a locked file into 503 here. */
type Guard = <T>(call: () => Promise<T>) => Promise<T>

/** A Backend made of its two halves, as both backends build it; `guard` wraps each account call. */
export function composeBackend(
  kind: Backend['kind'],
  accounts: AccountPart,
  boards: LeaderboardPart,
  close: () => Promise<void>,
  guard: Guard = (call) => call(),
): Backend {
  return {
    kind,
    authenticateGuest: () => guard(() => accounts.authenticateGuest()),
    register: (...args) => guard(() => accounts.register(...args)),
    login: (...args) => guard(() => accounts.login(...args)),
    refresh: (...args) => guard(() => accounts.refresh(...args)),
    sessionActive: (...args) => guard(() => accounts.sessionActive(...args)),
    sessionEnded: (...args) => guard(() => accounts.sessionEnded(...args)),
    logout: (...args) => guard(() => accounts.logout(...args)),
    getAccount: (...args) => guard(() => accounts.getAccount(...args)),
    renameUser: (...args) => guard(() => accounts.renameUser(...args)),
    eventWindow: (...args) => guard(() => accounts.eventWindow(...args)),
    grantRole: (...args) => guard(() => accounts.grantRole(...args)),
    revokeRole: (...args) => guard(() => accounts.revokeRole(...args)),
    listPrivileged: () => guard(() => accounts.listPrivileged()),
    recordLaunch: (...args) => boards.recordLaunch(...args),
    syncLeaderboards: (...args) => boards.syncLeaderboards(...args),
    writeRecord: (...args) => boards.writeRecord(...args),
    listRecords: (...args) => boards.listRecords(...args),
    close,
  }
}

/** What sign-in and refresh return: Nakama's Session plus the decoded claims the platform needs. */
export interface BackendSession {
  token: string
  refreshToken: string
  userId: string
  username: string
  /** Session token expiry, Unix milliseconds. */
  expiresAt: number
}

/** A backend account as the platform sees it. */
export interface Account {
  id: string
  username: string
  roles: string[]
}

/** One launched game session, as recorded in the backend. */
export interface Launch {
  sessionId: string
  gameId: string
  userId: string
  /** Unix milliseconds. */
  time: number
}

/** A leaderboard as the catalogue resolves it (CONTRACT §5). */
export interface LeaderboardConfig {
  id: string
  operator: Operator
  sortOrder: SortOrder
  resetSchedule: string | null
  authoritative: boolean
}

/** A score submission, after validation, as the backend applies it. */
export interface RecordWrite {
  leaderboardId: string
  ownerId: string
  /** The name the caller knows; a backend records the account's current name when it has one. */
  username: string
  score: number
  subscore: number
  /** A JSON object as text, at most 2 KiB; undefined keeps the stored metadata. */
  metadata?: string
}

/** A stored record with its rank, as the API serves it (spec 2.5 plus username and subscore). */
export interface LeaderboardRecord {
  leaderboard_id: string
  owner_id: string
  username: string
  score: number
  subscore: number
  rank: number
}

/** One page of a leaderboard to read. */
export interface RecordQuery {
  leaderboardId: string
  limit: number
  cursor?: string
  /** The caller, for `ownRecord`; undefined when not signed in. */
  ownerId?: string
}

/** A page of records, the cursor of the next one, and the caller's own record. */
export interface RecordPage {
  records: LeaderboardRecord[]
  nextCursor: string | null
  ownRecord: LeaderboardRecord | null
}
