import type Database from 'better-sqlite3'
import type { Backend } from '../backend.js'
import type { Migration } from './db.js'

/** Schema of leaderboards, records and launches: versions 200-299 (accounts own 100-199). */
export const LEADERBOARD_MIGRATIONS: Migration[] = []

type LeaderboardPart = Pick<Backend, 'recordLaunch' | 'syncLeaderboards' | 'writeRecord' | 'listRecords'>

/** Leaderboards on SQLite (stub until the leaderboards issue lands). */
export class LeaderboardStore implements LeaderboardPart {
  constructor(readonly db: Database.Database) {}
  async recordLaunch(..._args: unknown[]): Promise<void> { throw new Error('not implemented') }
  async syncLeaderboards(..._args: unknown[]): Promise<void> {}
  writeRecord(..._args: unknown[]): never { throw new Error('not implemented') }
  listRecords(..._args: unknown[]): never { throw new Error('not implemented') }
}
