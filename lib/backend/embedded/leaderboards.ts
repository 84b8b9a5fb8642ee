import type Database from 'better-sqlite3'
import type { Launch, LeaderboardConfig, LeaderboardPart, LeaderboardRecord, RecordPage, RecordQuery, RecordWrite } from '../backend.js'
import { unavailableIfBusy, type Migration } from './db.js'
import { overflow } from '../refusals.js'
import { applyOperator, MAX_SCORE } from '../../leaderboard.js'
import { BoardMemory } from './board-memory.js'
import { decodeCursor, encodeCursor } from './cursor.js'
import { GroupCommit } from './group-commit.js'
import { GENERATION_SQL, LEADERBOARD_SQL, NO_SCORE_INDEX_SQL, OWNER_INDEX_SQL, prepareStatements, StaleRecord, storeRecord, toRecord, type RecordEntry as Entry, type Statements } from './leaderboard-sql.js'

/** Schema of leaderboards, records and launches: versions 200-299 (accounts own 100-199). */
export const LEADERBOARD_MIGRATIONS: Migration[] = [
  { version: 200, name: 'leaderboards, records, launches', sql: LEADERBOARD_SQL },
  { version: 201, name: 'records by owner', sql: OWNER_INDEX_SQL },
  { version: 202, name: 'board generations', sql: GENERATION_SQL },
  { version: 203, name: 'no score index', sql: NO_SCORE_INDEX_SQL },
]

/** Tries of a write in all: MAX_TRIES - 1 decided on memory (a lost race means another process wrote the record), then one in a transaction of its own. */
const MAX_TRIES = 3

/**
 * Leaderboards on SQLite with an in-memory rank index per board period, filled from the database
 * when a period is first served and kept in step with every write (never a COUNT(*) per request).
 */
export class LeaderboardStore implements LeaderboardPart {
  readonly #memory: BoardMemory
  readonly #sql: Statements
  readonly #commits: GroupCommit
  /** Per board and owner, the commit of the last write not yet committed. */
  readonly #uncommitted = new Map<string, Promise<void>>()

  readonly #currentName: (ownerId: string) => string | undefined

  /**
   * `currentName` gives an owner's display name now: a record carries the name of the account when
   * it is written, not the one a session remembered from its sign-in (another session may have
   * renamed the account since, and someone else may hold the old name).
   */
  constructor(readonly db: Database.Database, currentName: (ownerId: string) => string | undefined = () => undefined) {
    this.#currentName = currentName
    this.#sql = prepareStatements(db)
    // A failed commit leaves memory ahead of the database for the boards it wrote: drop their
    // indexes so they are reloaded (a lost race with another process is one; the other boards,
    // perhaps of a million records, stay).
    this.#commits = new GroupCommit(db, (keys) => this.#memory.forget(keys.map((key) => key.slice(0, key.indexOf('\0')))))
    this.#memory = new BoardMemory(this.#sql, () => this.#commits.flush())
  }

  /** Record a launched game session (committed before it resolves). */
  async recordLaunch(launch: Launch): Promise<void> {
    await this.#commits.submit(() => this.#sql.insertLaunch.run(launch.sessionId, launch.gameId, launch.userId, launch.time))
  }

  /**
   * Make every catalogue leaderboard exist with its configuration. A changed configuration replaces
   * the stored one (unlike Nakama, which keeps the first): the new sort order re-ranks the current
   * records, a new operator applies to later writes, a new schedule starts a new period.
   */
  async syncLeaderboards(configs: LeaderboardConfig[], options: { wait?: boolean } = {}): Promise<void> {
    const now = Date.now()
    // The wait for another process's lock blocks the event loop (better-sqlite3 is synchronous):
    // a retry does not wait, it comes back later.
    const upsert = this.db.transaction(() => {
      for (const c of configs) this.#sql.upsertBoard.run(c.id, c.operator, c.sortOrder, c.resetSchedule, c.authoritative ? 1 : 0, now)
    })
    if (options.wait !== false) upsert()
    else {
      const waitMs = Number(this.db.pragma('busy_timeout', { simple: true }))
      this.db.pragma('busy_timeout = 0')
      try {
        upsert()
      } finally {
        this.db.pragma(`busy_timeout = ${waitMs}`)
      }
    }
    this.#memory.replace(configs, now)
  }

  /**
   * Write with the board's operator (Nakama semantics); committed before it resolves. When another
   * process wrote the record between decision and commit, the commit changes nothing (storeRecord)
   * and the write is decided again; after MAX_TRIES - 1 such races, in one transaction of its own.
   */
  async writeRecord(write: RecordWrite, now: number): Promise<LeaderboardRecord> {
    for (let tries = 1; tries < MAX_TRIES; tries++) {
      try {
        return await this.#write(write, now)
      } catch (err) {
        if (!(err instanceof StaleRecord)) throw err
        // Memory of this board is behind the file (a writer that raised no generation, too): read it again.
        this.#memory.board(write.leaderboardId).period = null
      }
    }
    return this.#writeAlone(write, now)
  }

  async #write(write: RecordWrite, now: number): Promise<LeaderboardRecord> {
    const { record, key, store } = this.#decide(write, now)
    if (!store) {
      // Nothing to write, but memory may hold a write still on its way to the disk: the answer waits
      // for it and fails with it (a record never stored is never confirmed), with the rank of now.
      const pending = this.#uncommitted.get(key)
      if (pending) await pending
      return record
    }
    const committed = this.#commits.submit(store, key)
    this.#uncommitted.set(key, committed)
    try {
      await committed
    } finally {
      if (this.#uncommitted.get(key) === committed) this.#uncommitted.delete(key)
    }
    return record
  }

  /** Decide and store in one IMMEDIATE transaction: no other process can write in between. */
  #writeAlone(write: RecordWrite, now: number): LeaderboardRecord {
    // This process's queued writes first, so the decision sees them and nothing waits on them.
    this.#commits.flush()
    try {
      return this.db.transaction(() => {
        const { record, store } = this.#decide(write, now)
        store?.()
        return record
      }).immediate()
    } catch (err) {
      this.#memory.forget([write.leaderboardId]) // the index took the write before the transaction failed
      throw unavailableIfBusy(err)
    }
  }

  /** The record a write answers and how to store it (null: no change), decided on memory made to match the file. */
  #decide(write: RecordWrite, now: number): { record: LeaderboardRecord; key: string; store: (() => void) | null } {
    this.#memory.follow()
    const board = this.#memory.board(write.leaderboardId)
    const { id, operator, sortOrder } = board.config
    const period = this.#memory.period(board, now)
    const old = period.index.get(write.ownerId)
    const next = applyOperator(old, write, operator, sortOrder)
    const key = `${id}\0${write.ownerId}`
    if (!next) return { record: toRecord(id, old!, period.index.rank(old!.ownerId)), key, store: null }
    if (next.score > MAX_SCORE) throw overflow('score')
    if (next.subscore > MAX_SCORE) throw overflow('subscore')
    const username = this.#currentName(write.ownerId) ?? write.username
    const entry: Entry = { ownerId: write.ownerId, username, score: next.score, subscore: next.subscore }
    const was = old && { score: old.score, subscore: old.subscore }
    const rank = period.index.set(entry) // memory first: a second write of the owner this turn builds on it
    const { expiry } = period
    const metadata = write.metadata ?? null
    const store = (): void => {
      storeRecord(this.#sql, { id, expiry, entry, was, metadata, now }, this.#currentName)
      this.#memory.own(id, this.#sql.bumpBoard.get(id)!)
    }
    return { record: toRecord(id, entry, rank), key, store }
  }

  /**
   * Every record of the owner takes the owner's new name, of every board and period (a board or a
   * period served again later shows it too): a record carries the name it was written with, which
   * the rename frees for someone else. Synchronous, so the account store runs it inside the
   * rename's transaction and both commit together. Memory follows only once that commit is done:
   * the caller runs the function returned then (a failed commit, a full disk, changes neither).
   */
  renameOwner(ownerId: string, username: string): () => void {
    this.#sql.renameOwner.run(username, ownerId)
    const bumped = this.#sql.bumpOwnerBoards.all(ownerId)
    return () => {
      for (const { id, generation } of bumped) this.#memory.own(id, generation)
      // The entry an index holds is the one a write still queued will store: it takes the name too.
      for (const board of this.#memory.boards()) {
        const entry = board.period?.index.get(ownerId)
        if (entry) entry.username = username
      }
    }
  }

  /** A page of the current period in rank order from the cursor, and the caller's own record. */
  async listRecords(query: RecordQuery, now: number): Promise<RecordPage> {
    this.#memory.follow()
    const board = this.#memory.board(query.leaderboardId)
    const period = this.#memory.period(board, now)
    const after = query.cursor === undefined ? null : decodeCursor(query.cursor, board.config.id, period.expiry, board.config.sortOrder)
    const { entries, more } = period.index.page(after, query.limit)
    const records = entries.map(({ key, rank }) => toRecord(board.config.id, key, rank))
    const last = entries[entries.length - 1]?.key
    const nextCursor = more && last ? encodeCursor({ leaderboardId: board.config.id, expiry: period.expiry, sortOrder: board.config.sortOrder, ...last }) : null
    const own = query.ownerId === undefined ? undefined : period.index.get(query.ownerId)
    const ownRecord = own ? toRecord(board.config.id, own, period.index.rank(own.ownerId)) : null
    return { records, nextCursor, ownRecord }
  }

  /** Commit queued writes at once (before the database closes). */
  flush(): void {
    this.#commits.flush()
  }

}
