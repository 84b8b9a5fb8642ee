import type Database from 'better-sqlite3'
import type { PlatformConfig } from '../../config.js'
import type { Backend } from '../backend.js'
import { openDatabase } from './db.js'
import { AccountStore, ACCOUNT_MIGRATIONS } from './accounts.js'
import { LeaderboardStore, LEADERBOARD_MIGRATIONS } from './leaderboards.js'

/** The embedded game backend: accounts, tokens, buckets, launches and leaderboards in one SQLite file. */
export function createEmbeddedBackend(config: Readonly<PlatformConfig>): Backend {
  const db: Database.Database = openDatabase(config.dataDir, [...ACCOUNT_MIGRATIONS, ...LEADERBOARD_MIGRATIONS])
  const accounts = new AccountStore(db, config)
  const boards = new LeaderboardStore(db)
  return {
    kind: 'embedded',
    authenticateGuest: () => accounts.authenticateGuest(),
    register: (username, password) => accounts.register(username, password),
    login: (username, password) => accounts.login(username, password),
    refresh: (refreshToken) => accounts.refresh(refreshToken),
    sessionActive: (refreshToken) => accounts.sessionActive(refreshToken),
    logout: (session) => accounts.logout(session),
    getAccount: (userId) => accounts.getAccount(userId),
    renameUser: (userId, username, rule, now) => accounts.renameUser(userId, username, rule, now),
    takeBucket: (key, rule, now) => accounts.takeBucket(key, rule, now),
    grantRole: (username, role) => accounts.grantRole(username, role),
    revokeRole: (username, role) => accounts.revokeRole(username, role),
    listPrivileged: () => accounts.listPrivileged(),
    recordLaunch: (launch) => boards.recordLaunch(launch),
    syncLeaderboards: (list) => boards.syncLeaderboards(list),
    writeRecord: (write, now) => boards.writeRecord(write, now),
    listRecords: (query, now) => boards.listRecords(query, now),
    close: async () => {
      // Commit writes still queued for this turn's group commit before the file closes.
      boards.flush()
      db.close()
    },
  }
}
