import type Database from 'better-sqlite3'
import type { PlatformConfig } from '../../config.js'
import { ACCOUNT_METHODS, composeBackend, type Backend } from '../backend.js'
import { openDatabase, unavailableIfBusy } from './db.js'
import { AccountStore, ACCOUNT_MIGRATIONS } from './accounts.js'
import { LeaderboardStore, LEADERBOARD_MIGRATIONS } from './leaderboards.js'

/** The embedded game backend: accounts, tokens, buckets, launches and leaderboards in one SQLite file. */
export function createEmbeddedBackend(config: Readonly<PlatformConfig>): Backend {
  const db: Database.Database = openDatabase(config.dataDir, [...ACCOUNT_MIGRATIONS, ...LEADERBOARD_MIGRATIONS])
  const accounts = new AccountStore(db, config)
  const boards = new LeaderboardStore(db, (ownerId) => accounts.usernameOf(ownerId))
  accounts.onRenamed = (userId, username) => boards.renameOwner(userId, username)
  const backend = composeBackend('embedded', accounts, boards, async () => {
    // Commit writes still queued for this turn's group commit before the file closes.
    boards.flush()
    db.close()
  })
  // Another process holding the file's write lock past busy_timeout is the backend being
  // unavailable (503), not a fault (500). Score writes say so in their group commit already.
  const methods = backend as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>
  for (const name of ACCOUNT_METHODS) {
    const method = methods[name]!
    methods[name] = async (...args: unknown[]) => {
      try {
        return await method(...args)
      } catch (err) {
        throw unavailableIfBusy(err)
      }
    }
  }
  return backend
}
