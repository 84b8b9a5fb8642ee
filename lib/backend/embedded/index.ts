import type Database from 'better-sqlite3'
import type { PlatformConfig } from '../../config.js'
import { composeBackend, type Backend } from '../backend.js'
import { checkDatabaseVersion, openDatabase, unavailableIfBusy, type Migration } from './db.js'
import { AccountStore, ACCOUNT_MIGRATIONS } from './accounts.js'
import { LeaderboardStore, LEADERBOARD_MIGRATIONS } from './leaderboards.js'

/** Steps over both halves' tables: versions 300-399, after both. */
const JOINT_MIGRATIONS: Migration[] = [
  {
    // Before renames changed the name on an account's records (renameOwner, with migration 201),
    // a record kept the name of its write: an upgraded database served renamed players' scores
    // under their old names, which others may hold now. Each record takes its owner's name once.
    // BINARY: accounts.username compares ignoring case, and alice -> Alice is a rename too.
    version: 300,
    name: 'record names follow earlier renames',
    sql: `UPDATE leaderboard_records
             SET username = (SELECT a.username FROM accounts a WHERE a.id = leaderboard_records.owner_id)
           WHERE EXISTS (SELECT 1 FROM accounts a
                          WHERE a.id = leaderboard_records.owner_id AND a.username <> leaderboard_records.username COLLATE BINARY)`,
  },
]

/** Every step of the embedded backend's schema. */
const MIGRATIONS = [...ACCOUNT_MIGRATIONS, ...LEADERBOARD_MIGRATIONS, ...JOINT_MIGRATIONS]

/** `bin/platform check`: a database a newer version has migrated is a ConfigError, as at the start. */
export function checkEmbeddedDatabase(config: Readonly<PlatformConfig>): void {
  checkDatabaseVersion(config.dataDir, MIGRATIONS)
}

/** The embedded game backend: accounts, tokens, buckets, launches and leaderboards in one SQLite file. */
export function createEmbeddedBackend(config: Readonly<PlatformConfig>): Backend {
  const db: Database.Database = openDatabase(config.dataDir, MIGRATIONS)
  const accounts = new AccountStore(db, config)
  const boards = new LeaderboardStore(db, (ownerId) => accounts.usernameOf(ownerId))
  accounts.onRenamed = (userId, username) => boards.renameOwner(userId, username)
  return composeBackend(
    'embedded',
    accounts,
    boards,
    async () => {
      // Commit writes still queued for this turn's group commit before the file closes.
      boards.flush()
      db.close()
    },
    // Another process holding the file's write lock past busy_timeout is the backend being
    // unavailable (503), not a fault (500). Score writes say so in their group commit already.
    async (call) => {
      try {
        return await call()
      } catch (err) {
        throw unavailableIfBusy(err)
      }
    },
  )
}
