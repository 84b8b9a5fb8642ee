import type { LeaderboardConfig } from '../backend.js'
import { leaderboardNotFound } from '../refusals.js'
import { nextExpiry, rankComparator } from '../../leaderboard.js'
import { RankIndex } from './rank-index.js'
import type { RecordEntry as Entry, Statements } from './leaderboard-sql.js'

/** The period being served: records expiring at `expiry`, valid for writes at `from` <= now < expiry. */
interface Period {
  expiry: number
  from: number
  index: RankIndex<Entry>
}

/** A catalogue board, and what memory holds of it. */
interface Board {
  config: LeaderboardConfig
  period: Period | null
  /** The board's generation in the file when `period` last matched it (read again with each fill). */
  generation: number
}

/**
 * The boards of the catalogue in force and their current periods in memory, kept matching the
 * file: a period is filled from SQLite when first served, and read again once another process has
 * written the board (its generation moved). `flush` commits this process's queued writes, which
 * must be in the file before a period is read from it.
 */
export class BoardMemory {
  #boards = new Map<string, Board>()
  /** The file's data_version at the last look: only another connection's commit changes it. */
  #version: number

  constructor(
    readonly sql: Statements,
    readonly flush: () => void,
  ) {
    this.#version = sql.dataVersion.get()!
  }

  /** Serve `configs` from now: a board whose operator, order and schedule stayed keeps its memory. */
  replace(configs: LeaderboardConfig[], now: number): void {
    const boards = new Map<string, Board>()
    for (const c of configs) {
      const old = this.#boards.get(c.id)
      const same = old && old.config.operator === c.operator && old.config.sortOrder === c.sortOrder && old.config.resetSchedule === c.resetSchedule
      boards.set(c.id, same ? old : { config: { ...c }, period: null, generation: 0 })
    }
    this.#boards = boards
    // Fill the current period of every board now, so the first request does not wait for it.
    for (const board of boards.values()) this.period(board, now)
  }

  /** The board of that id; 404 LEADERBOARD_NOT_FOUND when the catalogue has none. */
  board(id: string): Board {
    const board = this.#boards.get(id)
    if (!board) throw leaderboardNotFound(id)
    return board
  }

  /** Every board served. */
  boards(): IterableIterator<Board> {
    return this.#boards.values()
  }

  /** The period a write or read at `now` belongs to; a new period is filled from the database. */
  period(board: Board, now: number): Period {
    const p = board.period
    if (p && now >= p.from && (p.expiry === 0 || now < p.expiry)) return p
    const expiry = nextExpiry(board.config.resetSchedule, now)
    if (p && p.expiry === expiry) {
      p.from = Math.min(p.from, now)
      return p
    }
    board.period = { expiry, from: expiry === 0 ? -Infinity : now, index: this.#fill(board, expiry) }
    return board.period
  }

  /**
   * Another connection committed to the file since the last look: the boards whose generation moved
   * (another process wrote scores to them, or renamed an owner on them) are read again when next
   * served; other commits (accounts, sessions, a role granted) leave memory as it is.
   */
  follow(): void {
    const version = this.sql.dataVersion.get()!
    if (version === this.#version) return
    this.#version = version
    for (const { id, generation } of this.sql.generations.all()) {
      const board = this.#boards.get(id)
      if (board?.period && board.generation !== generation) board.period = null
    }
  }

  /**
   * This process raised the board's generation to `generation` (a write or rename it committed, or
   * is committing): one more than memory's, memory still matches the file; otherwise another
   * process wrote the board in between, and it is read again when next served.
   */
  own(id: string, generation: number): void {
    const board = this.#boards.get(id)
    if (!board) return
    if (board.period && generation === board.generation + 1) board.generation = generation
    else board.period = null
  }

  /** Drop the periods of the boards `ids`: each is read from the file again when next served. */
  forget(ids: Iterable<string>): void {
    for (const id of ids) {
      const board = this.#boards.get(id)
      if (board) board.period = null
    }
  }

  #fill(board: Board, expiry: number): RankIndex<Entry> {
    const { config } = board
    // Writes already in memory but still queued for the next commit are not in the database yet:
    // commit them first, or the new index would lack them and a later write would build on (or
    // insert over) a record the database already holds.
    this.flush()
    // Read before the records: a write of another process in between only makes the board read again.
    board.generation = this.sql.generation.get(config.id) ?? 0
    const entries = this.sql.selectPeriod.all(config.id, expiry) as Entry[]
    return RankIndex.build(entries, rankComparator(config.sortOrder))
  }
}
