import { parseSchedule } from './cron.js'
import { FakeError } from './errors.js'

/** A leaderboard as nk.leaderboardCreate stores it. */
export interface Board {
  id: string
  authoritative: boolean
  sortOrder: 'asc' | 'desc'
  operator: 'best' | 'set' | 'incr' | 'decr'
  resetSchedule: string | null
  metadata: Record<string, unknown>
  enableRanks: boolean
  createTime: number
}

/** One row of leaderboard_record; times in Unix seconds, metadata as JSONB text. */
export interface StoredRecord {
  leaderboardId: string
  ownerId: string
  username: string
  /** BIGINT in Postgres: exact here too. */
  score: bigint
  subscore: bigint
  numScore: number
  metadata: string
  createTime: number
  updateTime: number
  expiry: number
}

export interface RecordList {
  records: Array<StoredRecord & { rank: number }>
  ownerRecords: Array<StoredRecord & { rank: number }>
  nextCursor: string
  prevCursor: string
  rankCount: number
}

/** leaderboardRecordListCursor; `isNext` false is a prev_cursor (a page upwards). */
interface Cursor { isNext: boolean; id: string; expiry: number; score: bigint; subscore: bigint; ownerId: string; rank: number }

const INT64_MAX = 2n ** 63n - 1n

/** -1, 0 or 1 for bigints, as a sort comparator wants. */
function cmp(a: bigint, b: bigint): number {
  return a < b ? -1 : a > b ? 1 : 0
}

/** Postgres JSONB text: keys ordered by length then bytes, `": "` and `", "` separators. */
export function jsonbText(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(jsonbText).join(', ')}]`
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value).sort((a, b) => a.length - b.length || (a < b ? -1 : a > b ? 1 : 0))
    return `{${keys.map((k) => `${JSON.stringify(k)}: ${jsonbText((value as Record<string, unknown>)[k])}`).join(', ')}}`
  }
  return JSON.stringify(value)
}

/** Leaderboards with Nakama's operator semantics, ordering, rank cache and cursors (nakama-api.md §3). */
export class Leaderboards {
  readonly boards = new Map<string, Board>()
  readonly #records = new Map<string, Map<string, StoredRecord>>()
  /** v3.23+ honours enableRanks; false models v3.18, where ranks are always kept. */
  constructor(readonly ranksFlag: boolean, readonly maxLimit: number) {}

  /** Idempotent: an existing id keeps its configuration. */
  create(board: Board): void {
    if (!this.boards.has(board.id)) this.boards.set(board.id, board)
  }

  board(id: string): Board {
    const board = this.boards.get(id)
    if (!board) throw new FakeError(5, 'Leaderboard not found.')
    return board
  }

  /**
   * The current period's expiry as LeaderboardRecordWrite takes it, Next(now).UTC().Unix(); 0 without a
   * schedule. A schedule with no fire left gives Go's zero time, -62135596800, which Nakama stores as is.
   */
  expiry(board: Board, nowMs: number): number {
    if (!board.resetSchedule) return 0
    return Math.floor(parseSchedule(board.resetSchedule).next(new Date(nowMs)).getTime() / 1000)
  }

  /** calculatePrevReset (core_leaderboard.go, LeaderboardsGet's prevReset): 0 before the board exists, else Last(now). */
  lastReset(board: Board, nowMs: number): number {
    if (!board.resetSchedule || board.createTime * 1000 > nowMs) return 0
    return Math.floor(parseSchedule(board.resetSchedule).last(new Date(nowMs)).getTime() / 1000)
  }

  #period(id: string, expiry: number): Map<string, StoredRecord> {
    const key = `${id}\u0000${expiry}`
    let period = this.#records.get(key)
    if (!period) this.#records.set(key, (period = new Map()))
    return period
  }

  /** LeaderboardRecordWrite: the SQL upsert and its filter; a rejected write changes nothing. */
  write(id: string, ownerId: string, username: string | null, score: bigint, subscore: bigint,
    metadata: string | undefined, override: Board['operator'] | undefined, nowMs: number): StoredRecord & { rank: number } {
    const board = this.board(id)
    const expiry = this.expiry(board, nowMs)
    const period = this.#period(id, expiry)
    const old = period.get(ownerId)
    const op = override ?? board.operator
    const now = Math.floor(nowMs / 1000)
    // The upsert's VALUES row carries the given pair (decr inserts 0/0), and Postgres checks
    // CHECK (score >= 0) on it before the conflict is resolved: a negative best, set or incr fails
    // even on an existing row (nakama-api.md §3.1); so does a result past BIGINT.
    const failed = () => new FakeError(13, 'Error writing score to leaderboard.')
    if (op !== 'decr' && (score < 0n || subscore < 0n)) throw failed()
    let next: [bigint, bigint] | null
    if (!old) next = op === 'decr' ? [0n, 0n] : [score, subscore]
    else next = apply(op, board.sortOrder, [old.score, old.subscore], [score, subscore])
    if (next && (next[0] < 0n || next[1] < 0n || next[0] > INT64_MAX || next[1] > INT64_MAX)) throw failed()
    if (!old) {
      period.set(ownerId, {
        leaderboardId: id, ownerId, username: username ?? '', score: next![0], subscore: next![1], numScore: 1,
        metadata: metadata ?? '{}', createTime: now, updateTime: now, expiry,
      })
    } else if (next) {
      Object.assign(old, {
        score: next[0], subscore: next[1], numScore: old.numScore + 1, username: username ?? old.username,
        metadata: metadata ?? old.metadata, updateTime: now,
      })
    }
    const record = period.get(ownerId)!
    return { ...record, rank: this.rank(board, record) }
  }

  #sorted(board: Board, expiry: number): StoredRecord[] {
    const rows = [...this.#period(board.id, expiry).values()]
    const sign = board.sortOrder === 'desc' ? -1 : 1
    return rows.sort((a, b) => sign * (cmp(a.score, b.score) || cmp(a.subscore, b.subscore) || (a.ownerId < b.ownerId ? -1 : a.ownerId > b.ownerId ? 1 : 0)))
  }

  /** The rank cache's answer: 0 when ranks are disabled (v3.23+ without enableRanks). */
  rank(board: Board, record: StoredRecord): number {
    if (this.ranksFlag && !board.enableRanks) return 0
    return this.#sorted(board, record.expiry).findIndex((r) => r.ownerId === record.ownerId) + 1
  }

  /**
   * LeaderboardRecordsList: a page from the cursor plus the owners' records (nakama-api.md §1.7).
   * A cursor holds the listing direction and the record (score, subscore, owner id) and rank it
   * stands at: a next cursor lists the records after it, counting ranks up from its rank; a
   * prev_cursor (`isNext` false) lists the page before it, counting down, shown in rank order.
   * A page reached through a cursor carries a prev_cursor at its first record; one more record
   * beyond the page in the listing direction gives the next_cursor (the prev_cursor when listing
   * upwards), as LeaderboardRecordsList builds and swaps them.
   */
  list(id: string, ownerIds: string[], limit: number | undefined, cursor: string, expiryOverride: number, nowMs: number): RecordList {
    const board = this.board(id)
    if (limit !== undefined && (limit < 1 || limit > this.maxLimit)) {
      throw new FakeError(3, `Invalid limit - limit must be between 1 and ${this.maxLimit}.`)
    }
    const expiry = expiryOverride || this.expiry(board, nowMs)
    const sorted = this.#sorted(board, expiry)
    const ranked = !(this.ranksFlag && !board.enableRanks)
    const result: RecordList = { records: [], ownerRecords: [], nextCursor: '', prevCursor: '', rankCount: ranked ? sorted.length : 0 }
    if (limit !== undefined || ownerIds.length === 0 || cursor) {
      const n = limit ?? 1
      const at = (r: StoredRecord, isNext: boolean, rank: number) =>
        encodeCursor({ isNext, id, expiry, score: r.score, subscore: r.subscore, ownerId: r.ownerId, rank })
      const c = cursor ? decodeCursor(cursor) : null
      if (cursor && (!c || c.id !== id || c.expiry !== expiry)) throw new FakeError(3, 'Cursor is invalid or expired.')
      if (!c) {
        const page = sorted.slice(0, n)
        result.records = page.map((r, i) => ({ ...r, rank: i + 1 }))
        if (sorted.length > n) result.nextCursor = at(page[n - 1]!, true, n)
      } else {
        // Where the cursor's record stands in listing order (the record itself may be gone).
        const sign = board.sortOrder === 'desc' ? -1 : 1
        const order = (r: StoredRecord) => sign * (cmp(r.score, c.score) || cmp(r.subscore, c.subscore) || (r.ownerId < c.ownerId ? -1 : r.ownerId > c.ownerId ? 1 : 0))
        let after = sorted.findIndex((r) => order(r) > 0)
        if (after < 0) after = sorted.length
        if (c.isNext) {
          const page = sorted.slice(after, after + n)
          result.records = page.map((r, i) => ({ ...r, rank: c.rank + i + 1 }))
          if (page.length) result.prevCursor = at(page[0]!, false, c.rank + 1)
          if (after + n < sorted.length && page.length) result.nextCursor = at(page[page.length - 1]!, true, c.rank + page.length)
        } else {
          let before = sorted.findIndex((r) => order(r) >= 0)
          if (before < 0) before = sorted.length
          const from = Math.max(0, before - n)
          const page = sorted.slice(from, before)
          result.records = page.map((r, i) => ({ ...r, rank: c.rank - (page.length - i) }))
          const first = result.records[0]
          const last = result.records[result.records.length - 1]
          if (last) result.nextCursor = at(last, true, last.rank)
          if (first && from > 0) result.prevCursor = at(first, false, first.rank)
        }
      }
    }
    result.ownerRecords = sorted.filter((r) => ownerIds.includes(r.ownerId)).map((r) => ({ ...r, rank: this.rank(board, r) }))
    return result
  }

  /**
   * LeaderboardRecordsHaystack (nakama-api.md §1.8): up to `limit` records around the owner, as
   * Nakama's two queries pick them (up to limit+1 above, then limit/2+1 below), ranked from the rank
   * cache; empty when the owner has no record; with a cursor, a plain listing.
   */
  haystack(id: string, ownerId: string, limit: number, cursor: string, expiryOverride: number, nowMs: number): RecordList {
    const board = this.board(id)
    const expiry = expiryOverride || this.expiry(board, nowMs)
    if (cursor) return this.list(id, [], limit, cursor, expiry, nowMs)
    const sorted = this.#sorted(board, expiry)
    const at = sorted.findIndex((r) => r.ownerId === ownerId)
    if (at < 0) return { records: [], ownerRecords: [], nextCursor: '', prevCursor: '', rankCount: 0 }
    let above = sorted.slice(Math.max(0, at - limit - 1), at)
    let setPrev = above.length > limit
    if (setPrev) above = above.slice(1)
    let secondLimit = Math.floor(limit / 2)
    if (above.length < secondLimit) secondLimit = limit - above.length
    let below = sorted.slice(at + 1, at + 2 + secondLimit)
    const setNext = below.length > secondLimit
    if (setNext) below = below.slice(0, secondLimit)
    const around = [...above, sorted[at]!, ...below]
    let start = around.length - limit
    if (start < 0 || above.length < secondLimit) start = 0
    if (start > 0) setPrev = true
    const ranked = !(this.ranksFlag && !board.enableRanks)
    const records = around.slice(start, start + limit).map((r) => ({ ...r, rank: ranked ? sorted.indexOf(r) + 1 : 0 }))
    const cursorAt = (r: StoredRecord & { rank: number }, isNext: boolean) =>
      encodeCursor({ isNext, id, expiry, score: r.score, subscore: r.subscore, ownerId: r.ownerId, rank: r.rank })
    return {
      records, ownerRecords: [], rankCount: ranked ? sorted.length : 0,
      prevCursor: setPrev ? cursorAt(records[0]!, false) : '', nextCursor: setNext ? cursorAt(records[records.length - 1]!, true) : '',
    }
  }
}

const max = (a: bigint, b: bigint) => (a > b ? a : b)
const min = (a: bigint, b: bigint) => (a < b ? a : b)

function apply(op: Board['operator'], sort: Board['sortOrder'], old: [bigint, bigint], given: [bigint, bigint]): [bigint, bigint] | null {
  const [s, ss] = old
  const [n, ns] = given
  switch (op) {
    case 'best': {
      const better = sort === 'desc' ? n > s || ns > ss : n < s || ns < ss
      if (!better) return null
      return sort === 'desc' ? [max(s, n), max(ss, ns)] : [min(s, n), min(ss, ns)]
    }
    case 'set':
      return n === s && ns === ss ? null : [n, ns]
    case 'incr':
      return n === 0n && ns === 0n ? null : [s + n, ss + ns]
    case 'decr':
      return n === 0n && ns === 0n ? null : [max(s - n, 0n), max(ss - ns, 0n)]
  }
}

// Nakama's cursors are base64url gob blobs; this fake uses base64url JSON, equally opaque to clients.
function encodeCursor(c: Cursor): string {
  return Buffer.from(JSON.stringify({ ...c, score: String(c.score), subscore: String(c.subscore) })).toString('base64url')
}

function decodeCursor(text: string): Cursor | null {
  try {
    const c = JSON.parse(Buffer.from(text, 'base64url').toString()) as Omit<Cursor, 'score' | 'subscore'> & { score: string; subscore: string }
    return typeof c.id === 'string' && typeof c.rank === 'number' ? { ...c, isNext: c.isNext !== false, score: BigInt(c.score), subscore: BigInt(c.subscore) } : null
  } catch {
    return null
  }
}
