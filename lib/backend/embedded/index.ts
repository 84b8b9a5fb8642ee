import type Database from 'better-sqlite3'
import type { PlatformConfig } from '../../config.js'
import { composeBackend, type Backend } from '../backend.js'
import { openDatabase } from './db.js'
import { AccountStore, ACCOUNT_MIGRATIONS } from './accounts.js'
import { LeaderboardStore, LEADERBOARD_MIGRATIONS } from './leaderboards.js'

/** The embedded game backend: accounts, tokens, buckets, launches and leaderboards in one SQLite file. */
export function createEmbeddedBackend(config: Readonly<PlatformConfig>): Backend {
  const db: Database.Database = openDatabase(config.dataDir, [...ACCOUNT_MIGRATIONS, ...LEADERBOARD_MIGRATIONS])
  const accounts = new AccountStore(db, config)
  const boards = new LeaderboardStore(db, (ownerId) => accounts.usernameOf(ownerId))
  return composeBackend('embedded', accounts, boards, async () => {
    // Commit writes still queued for this turn's group commit before the file closes.
    boards.flush()
    db.close()
  })
}
