import { randomBytes, randomUUID } from 'node:crypto'
import type Database from 'better-sqlite3'
import type { PlatformConfig } from '../../config.js'
import { invalidCredentials, noSession, tooManyRenames, userNotFound, usernameTaken } from '../refusals.js'
import type { Rule } from '../../limiter.js'
import { loadSecret } from '../../secrets.js'
import type { Account, AccountPart, BackendSession } from '../backend.js'
import { BucketStore } from './buckets.js'
import type { Migration } from './db.js'
import { EventWindowStore } from './event-windows.js'
import { hashPassword, verifyNothing, verifyPassword } from './passwords.js'
import { SessionIssuer } from './sessions.js'

/** Schema of accounts, tokens, roles and buckets: versions 100-199 (leaderboards own 200-299). */
export const ACCOUNT_MIGRATIONS: Migration[] = [
  {
    version: 100,
    name: 'accounts, roles, revoked sessions, buckets',
    // COLLATE NOCASE folds ASCII only, which is all a username may hold: names are unique ignoring case.
    sql: `
      CREATE TABLE accounts (
        id TEXT PRIMARY KEY,
        username TEXT NOT NULL COLLATE NOCASE UNIQUE,
        password_hash TEXT,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
      );
      CREATE TABLE account_roles (
        account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
        role TEXT NOT NULL,
        granted_at INTEGER NOT NULL,
        PRIMARY KEY (account_id, role)
      ) WITHOUT ROWID;
      CREATE TABLE revoked_sessions (tid TEXT PRIMARY KEY, revoked_at INTEGER NOT NULL) WITHOUT ROWID;
      CREATE TABLE buckets (key TEXT PRIMARY KEY, tokens REAL NOT NULL, updated_at INTEGER NOT NULL) WITHOUT ROWID;
    `,
  },
  {
    version: 101,
    name: 'event windows (failed sign-ins per address)',
    // times: a JSON array of ms, oldest first; last_at lets old rows be swept with the index.
    sql: `
      CREATE TABLE event_windows (key TEXT PRIMARY KEY, times TEXT NOT NULL, last_at INTEGER NOT NULL) WITHOUT ROWID;
      CREATE INDEX event_windows_last_at ON event_windows (last_at);
    `,
  },
]

interface Row {
  id: string
  username: string
  password_hash: string | null
}

/** Accounts, passwords, sessions, roles, buckets and event windows on SQLite: the account half of the embedded backend. */
export class AccountStore implements AccountPart {
  readonly #sessions: SessionIssuer
  readonly #buckets: BucketStore
  readonly #windows: EventWindowStore
  readonly #statements = new Map<string, Database.Statement>()

  /**
   * Run inside a rename's transaction after the account's name changed (the leaderboards' records
   * follow it); what it returns runs once that transaction has committed (the names in memory).
   */
  onRenamed: (userId: string, username: string) => () => void = () => () => {}

  /** `clock` is injected by tests that move time (token expiry); the platform uses Date.now. */
  constructor(readonly db: Database.Database, readonly config: Readonly<PlatformConfig>, readonly clock: () => number = Date.now) {
    // Generated once into DATA_DIR/secrets (mode 0600); two keys, as Nakama requires them to differ.
    const keys = { session: loadSecret(config.dataDir, 'token-key', null), refresh: loadSecret(config.dataDir, 'refresh-key', null) }
    this.#sessions = new SessionIssuer(db, keys, clock)
    this.#buckets = new BucketStore(db)
    this.#windows = new EventWindowStore(db)
  }

  async authenticateGuest(): Promise<BackendSession> {
    // 4 random bytes give 2^32 names; on the rare collision, draw again.
    for (;;) {
      const username = `guest-${randomBytes(4).toString('hex')}`
      const account = this.#insert(username, null)
      if (account) return this.#sessions.issue(account)
    }
  }

  async register(username: string, password: string, signal?: AbortSignal): Promise<BackendSession> {
    if (this.#byName(username)) throw usernameTaken(username)
    const account = this.#insert(username, await hashPassword(password, signal))
    // Someone took the name while the hash was computed.
    if (!account) throw usernameTaken(username)
    return this.#sessions.issue(account)
  }

  async login(username: string, password: string, signal?: AbortSignal): Promise<BackendSession> {
    const row = this.#byName(username)
    const ok = row?.password_hash ? await verifyPassword(password, row.password_hash, signal) : await verifyNothing(password, signal)
    if (!row || !ok) throw invalidCredentials()
    return this.#sessions.issue(row)
  }

  async refresh(refreshToken: string): Promise<BackendSession> {
    const claims = this.#sessions.check(refreshToken)
    const row = claims && this.#byId(claims.uid)
    if (!claims || !row) throw noSession()
    // Nakama re-reads the username on refresh, so a renamed user's new token carries the new name.
    return this.#sessions.refresh(claims, row.username)
  }

  async sessionActive(refreshToken: string, userId: string): Promise<boolean> {
    return this.#sessions.check(refreshToken)?.uid === userId
  }

  async sessionEnded(refreshToken: string, userId: string): Promise<boolean> {
    // A refresh keeps the refresh token's expiry (SessionIssuer): every token of a session ends with it.
    return !(await this.sessionActive(refreshToken, userId))
  }

  async logout(session: { token: string; refreshToken: string }): Promise<void> {
    this.#sessions.revoke(session)
  }

  /** The account's display name now, read synchronously for a leaderboard write. */
  usernameOf(userId: string): string | undefined {
    return this.#byId(userId)?.username
  }

  async getAccount(userId: string): Promise<Account | null> {
    const row = this.#byId(userId)
    return row ? this.#account(row) : null
  }

  async renameUser(userId: string, username: string, rule: Rule, now: number): Promise<Account> {
    let committed = (): void => {}
    const rename = this.db.transaction((): Account => {
      const row = this.#byId(userId)
      if (!row) throw noSession()
      // The same name, same case: nothing changes, so nothing is spent.
      if (row.username === username) return this.#account(row)
      const holder = this.#byName(username)
      if (holder && holder.id !== userId) throw usernameTaken(username)
      const { allowed, waitMs } = this.#buckets.takeInTransaction(`rename:${userId}`, rule, now)
      if (!allowed) throw tooManyRenames(waitMs)
      this.#sql('UPDATE accounts SET username = ?, updated_at = ? WHERE id = ?').run(username, now, userId)
      committed = this.onRenamed(userId, username)
      return this.#account({ ...row, username })
    })
    // IMMEDIATE: the write lock is held from the bucket read to the bucket write, across processes too.
    const account = rename.immediate()
    committed()
    return account
  }

  async eventWindow(key: string, now: number, windowMs: number, record?: { keep: number }): Promise<number[]> {
    return record ? this.#windows.record(key, now, windowMs, record.keep) : this.#windows.recent(key, now, windowMs)
  }

  async grantRole(username: string, role: string): Promise<Account> {
    const row = this.#named(username)
    this.#sql('INSERT OR IGNORE INTO account_roles (account_id, role, granted_at) VALUES (?, ?, ?)').run(row.id, role, this.clock())
    return this.#account(row)
  }

  async revokeRole(username: string, role: string): Promise<Account> {
    const row = this.#named(username)
    this.#sql('DELETE FROM account_roles WHERE account_id = ? AND role = ?').run(row.id, role)
    return this.#account(row)
  }

  async listPrivileged(): Promise<Account[]> {
    const rows = this.#sql('SELECT id, username, password_hash FROM accounts WHERE id IN (SELECT account_id FROM account_roles) ORDER BY username')
      .all() as Row[]
    return rows.map((row) => this.#account(row))
  }

  /** A prepared statement, compiled once: getAccount runs on every role check. */
  #sql(source: string): Database.Statement {
    let statement = this.#statements.get(source)
    if (!statement) this.#statements.set(source, (statement = this.db.prepare(source)))
    return statement
  }

  /** Insert an account; null when the name is taken (ignoring case). */
  #insert(username: string, passwordHash: string | null): Row | null {
    const id = randomUUID()
    const now = this.clock()
    const result = this.#sql('INSERT INTO accounts (id, username, password_hash, created_at, updated_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (username) DO NOTHING')
      .run(id, username, passwordHash, now, now)
    return result.changes === 1 ? { id, username, password_hash: passwordHash } : null
  }

  #byName(username: string): Row | undefined {
    return this.#sql('SELECT id, username, password_hash FROM accounts WHERE username = ?').get(username) as Row | undefined
  }

  #byId(id: string): Row | undefined {
    return this.#sql('SELECT id, username, password_hash FROM accounts WHERE id = ?').get(id) as Row | undefined
  }

  #named(username: string): Row {
    const row = this.#byName(username)
    if (!row) throw userNotFound(username)
    return row
  }

  #account(row: Row): Account {
    const roles = this.#sql('SELECT role FROM account_roles WHERE account_id = ? ORDER BY role').pluck().all(row.id) as string[]
    return { id: row.id, username: row.username, roles }
  }
}

