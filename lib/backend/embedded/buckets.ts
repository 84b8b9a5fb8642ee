import type Database from 'better-sqlite3'
import { take, type Bucket, type Rule, type TakeResult } from '../../limiter.js'

/**
 * Token buckets stored in SQLite (table `buckets`), so a limit outlives a restart and holds
 * across platform processes sharing the file. The arithmetic is lib/limiter.ts's pure `take`.
 */
export class BucketStore {
  readonly #read: Database.Statement<[string], { tokens: number; updatedAt: number }>
  readonly #write: Database.Statement<[string, number, number]>

  constructor(readonly db: Database.Database) {
    this.#read = db.prepare('SELECT tokens, updated_at AS updatedAt FROM buckets WHERE key = ?')
    this.#write = db.prepare(
      'INSERT INTO buckets (key, tokens, updated_at) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET tokens = excluded.tokens, updated_at = excluded.updated_at',
    )
  }

  /** Take one token; the caller must hold a write transaction (renameUser does, around its rename). */
  takeInTransaction(key: string, rule: Rule, now: number): TakeResult {
    const stored: Bucket | undefined = this.#read.get(key)
    const result = take(stored, rule, now)
    if (result.allowed) this.#write.run(key, result.bucket.tokens, result.bucket.updatedAt)
    return result
  }
}
