import { createHash, randomUUID } from 'node:crypto'
import { FakeError } from './errors.js'
import { Leaderboards } from './leaderboards.js'

/** Nakama's system user: the owner of storage objects written without one (and of all of Playfield's). */
export const SYSTEM_USER = '00000000-0000-0000-0000-000000000000'

/** The users columns UpdateAccountRequest writes. */
export type AccountColumn = 'username' | 'displayName' | 'avatarUrl' | 'langTag' | 'location' | 'timezone'

/** A row of Nakama's users table (the parts the fake needs). */
export interface User {
  id: string
  username: string
  email?: string
  /** sha256 of the password: the fake's stand-in for bcrypt. */
  password?: string
  customId?: string
  /** The one device id authenticate/device linked (a user_device row). */
  deviceId?: string
  /** The optional columns PUT /v2/account sets (nakama-api.md §1.5); absent is NULL. */
  displayName?: string
  avatarUrl?: string
  /** 'en' for a new account (nakama-api.md §1.4's example). */
  langTag?: string
  location?: string
  timezone?: string
  createTime: number
  updateTime: number
  /** When the account was banned (users.disable_time, unix seconds); absent is the epoch: not banned. */
  disableTime?: number
}

/** A row of Nakama's storage table; `value` is JSON text, `version` its MD5 as in Nakama. */
export interface StorageObject {
  collection: string
  key: string
  userId: string
  value: string
  version: string
  permissionRead: number
  permissionWrite: number
  createTime: number
  updateTime: number
}

export interface StorageWrite {
  collection: string
  key: string
  userId: string
  value: unknown
  version?: string
  permissionRead?: number
  permissionWrite?: number
}

const CONTROL = /[\u0000-\u001f\u007f]/

/** Which Nakama the fake imitates: the differences of nakama-api.md §5. */
export interface Flavour {
  /** v3.25+: tokens carry `iat`. */
  iat: boolean
  /** v3.21+: list limit up to 1000 (else 100). */
  maxLimit: number
  /** v3.23+: ranks only for boards created with enableRanks. */
  ranksFlag: boolean
  /** v3.37+: the wrapped duplicate-username message of PUT /v2/account. */
  wrappedRenameError: boolean
}

/** Everything a Nakama keeps in its database, plus its in-memory session blacklist. */
export class FakeState {
  readonly users = new Map<string, User>()
  readonly storage = new Map<string, StorageObject>()
  /**
   * Logged-out token ids: in memory only, lost on restart (nakama-api.md §1.3). Session and refresh
   * tokens apart, as LocalSessionCache keeps them (server/session_cache.go: Remove puts an id only
   * in the map of the token it was given; IsValidSession and IsValidRefresh each read their own).
   */
  readonly blacklist = { session: new Set<string>(), refresh: new Set<string>() }
  readonly issued = new Map<string, Set<string>>()
  readonly leaderboards: Leaderboards

  constructor(readonly flavour: Flavour, readonly now: () => number) {
    this.leaderboards = new Leaderboards(flavour.ranksFlag, flavour.maxLimit)
  }

  /** Create a user; 409 code 6 when the name is taken (case-sensitive, as Postgres' UNIQUE). */
  createUser(username: string | undefined, fields: Partial<User>): User {
    const name = username ?? generateUsername()
    checkUsername(name)
    if (this.byUsername(name)) throw new FakeError(6, 'Username is already in use.')
    const t = Math.floor(this.now() / 1000)
    const user: User = { id: randomUUID(), username: name, langTag: 'en', createTime: t, updateTime: t, ...fields }
    this.users.set(user.id, user)
    return user
  }

  /**
   * core_session.go SessionLogout on LocalSessionCache (server/session_cache.go): each token given
   * invalidates its id in its own kind's list only (Remove); with none given, every token of the
   * user, of both kinds, is (RemoveAll).
   */
  logOut(uid: string, removed: Array<['session' | 'refresh', string]>): void {
    if (removed.length === 0) {
      for (const tid of this.issued.get(uid) ?? []) {
        this.blacklist.session.add(tid)
        this.blacklist.refresh.add(tid)
      }
      return
    }
    for (const [kind, tid] of removed) this.blacklist[kind].add(tid)
  }

  /**
   * BanUsers (server/core_user.go): disable_time set to now, and the session cache's Ban, which
   * invalidates every token of the user issued until now, of both kinds (server/session_cache.go),
   * in memory only as any invalidation (nakama-api.md §1.3). Authenticating is then refused (§1.1).
   */
  ban(userId: string): void {
    const user = this.users.get(userId)
    if (!user) throw new FakeError(5, 'User account not found.')
    user.disableTime = Math.floor(this.now() / 1000)
    this.logOut(userId, [])
  }

  /** UnbanUsers: disable_time back to the epoch; the tokens the ban ended stay ended (Unban does nothing). */
  unban(userId: string): void {
    const user = this.users.get(userId)
    if (user) delete user.disableTime
  }

  byUsername(username: string): User | undefined {
    for (const user of this.users.values()) if (user.username === username) return user
    return undefined
  }

  /** updateAccounts with a username only. */
  rename(userId: string, username: string): void {
    this.updateAccount(userId, { username })
  }

  /**
   * updateAccounts: one UPDATE of the given columns, an empty string setting the column to NULL
   * (nakama-api.md §1.5); a taken name is a unique-constraint failure and changes nothing. Values
   * equal to the stored ones are a no-op; otherwise update_time moves to now.
   */
  updateAccount(userId: string, fields: Partial<Record<AccountColumn, string>>): void {
    if (fields.username !== undefined) checkUsername(fields.username)
    const user = this.users.get(userId)
    if (!user) throw new FakeError(5, 'User account not found.')
    if (fields.username !== undefined) {
      const other = this.byUsername(fields.username)
      if (other && other.id !== userId) throw new FakeError(6, 'Username is already in use.')
    }
    let changed = false
    for (const [column, given] of Object.entries(fields) as Array<[AccountColumn, string | undefined]>) {
      if (given === undefined) continue
      // An empty optional column is NULL; a username is checked above and never empty.
      const value = column === 'username' ? given : given || undefined
      if (user[column] === value) continue
      ;(user as Record<AccountColumn, string | undefined>)[column] = value
      changed = true
    }
    if (changed) user.updateTime = Math.floor(this.now() / 1000)
  }

  #key(collection: string, key: string, userId: string): string {
    return `${collection}\u0000${key}\u0000${userId}`
  }

  read(collection: string, key: string, userId: string): StorageObject | undefined {
    return this.storage.get(this.#key(collection, key, userId))
  }

  /** One transaction: every version check passes, then every object is written; else nothing is. */
  write(writes: StorageWrite[]): StorageObject[] {
    for (const w of writes) {
      const old = this.read(w.collection, w.key, w.userId)
      if (w.version === '*' ? old !== undefined : w.version ? old?.version !== w.version : false) {
        throw new FakeError(3, 'Storage write rejected - version check failed.')
      }
    }
    const t = Math.floor(this.now() / 1000)
    return writes.map((w) => {
      const old = this.read(w.collection, w.key, w.userId)
      const value = JSON.stringify(w.value)
      const object: StorageObject = {
        collection: w.collection, key: w.key, userId: w.userId, value,
        version: createHash('md5').update(value).digest('hex'),
        permissionRead: w.permissionRead ?? 1, permissionWrite: w.permissionWrite ?? 1,
        createTime: old?.createTime ?? t, updateTime: t,
      }
      this.storage.set(this.#key(w.collection, w.key, w.userId), object)
      return object
    })
  }

  remove(deletes: Array<{ collection: string; key: string; userId: string; version?: string }>): void {
    for (const d of deletes) {
      const old = this.read(d.collection, d.key, d.userId)
      // StorageDeleteObjects: with a version, no row deleted (gone, or another version) is a refusal.
      if (d.version && (!old || old.version !== d.version)) throw new FakeError(3, 'Storage delete rejected - not found, version check failed, or permission denied.')
    }
    for (const d of deletes) this.storage.delete(this.#key(d.collection, d.key, d.userId))
  }
}

/** Nakama's username rule: 1-128 bytes, no control characters; plain spaces are allowed. */
export function checkUsername(name: string): void {
  if (Buffer.byteLength(name) < 1 || Buffer.byteLength(name) > 128) throw new FakeError(3, 'Username invalid, must be 1-128 bytes.')
  if (CONTROL.test(name)) throw new FakeError(3, 'Username invalid, no spaces or control characters allowed.')
}

/** generateUsername: ten random letters a-z and A-Z. */
function generateUsername(): string {
  const letters = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'
  let name = ''
  for (let i = 0; i < 10; i++) name += letters[Math.floor(Math.random() * letters.length)]
  return name
}
