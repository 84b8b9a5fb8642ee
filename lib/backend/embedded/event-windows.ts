import type Database from 'better-sqlite3'
import { inWindow } from '../backend.js'

/**
 * Event windows stored in SQLite (table `event_windows`): the times of a key's recent events (the
 * sign-in limit's failures per address), so they outlive a restart and hold across platform
 * processes sharing the file. Backend.eventWindow says what a window answers.
 */
export class EventWindowStore {
  readonly #read: Database.Statement<[string], { times: string }>
  readonly #write: Database.Statement<[string, string, number]>
  readonly #sweep: Database.Statement<[number]>

  constructor(readonly db: Database.Database) {
    this.#read = db.prepare('SELECT times FROM event_windows WHERE key = ?')
    this.#write = db.prepare(
      'INSERT INTO event_windows (key, times, last_at) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET times = excluded.times, last_at = excluded.last_at',
    )
    this.#sweep = db.prepare('DELETE FROM event_windows WHERE last_at <= ?')
  }

  /** The times of `key`'s events younger than `windowMs` at `now`, oldest first (Backend.eventWindow). */
  recent(key: string, now: number, windowMs: number): number[] {
    const row = this.#read.get(key)
    return row ? (JSON.parse(row.times) as number[]).filter((time) => inWindow(time, now, windowMs)) : []
  }

  /** Add `now` to `key`'s window, keeping the latest `keep`; the times after it. */
  record(key: string, now: number, windowMs: number, keep: number): number[] {
    // IMMEDIATE: the read and the write of one window are one step, across processes too.
    const add = this.db.transaction(() => {
      // In time order whatever order the writes came in (instances' clocks differ a little).
      const times = [...this.recent(key, now, windowMs), now].sort((a, b) => a - b).slice(-keep)
      this.#write.run(key, JSON.stringify(times), now)
      // Windows nobody added to for a while hold nothing that still counts.
      this.#sweep.run(now - windowMs)
      return times
    })
    return add.immediate()
  }
}
