import type Database from 'better-sqlite3'
import type { PlatformConfig } from '../../config.js'
import type { Backend } from '../backend.js'
import type { Migration } from './db.js'

/** Schema of accounts, tokens, roles and buckets: versions 100-199 (leaderboards own 200-299). */
export const ACCOUNT_MIGRATIONS: Migration[] = []

type AccountPart = Omit<Backend, 'kind' | 'recordLaunch' | 'syncLeaderboards' | 'writeRecord' | 'listRecords' | 'close'>

/** Accounts on SQLite (stub until the accounts issue lands). */
export class AccountStore implements AccountPart {
  constructor(readonly db: Database.Database, readonly config: Readonly<PlatformConfig>) {}
  authenticateGuest(..._args: unknown[]): never { throw new Error('not implemented') }
  register(..._args: unknown[]): never { throw new Error('not implemented') }
  login(..._args: unknown[]): never { throw new Error('not implemented') }
  refresh(..._args: unknown[]): never { throw new Error('not implemented') }
  sessionActive(..._args: unknown[]): never { throw new Error('not implemented') }
  logout(..._args: unknown[]): never { throw new Error('not implemented') }
  getAccount(..._args: unknown[]): never { throw new Error('not implemented') }
  renameUser(..._args: unknown[]): never { throw new Error('not implemented') }
  takeBucket(..._args: unknown[]): never { throw new Error('not implemented') }
  grantRole(..._args: unknown[]): never { throw new Error('not implemented') }
  revokeRole(..._args: unknown[]): never { throw new Error('not implemented') }
  listPrivileged(..._args: unknown[]): never { throw new Error('not implemented') }
}
