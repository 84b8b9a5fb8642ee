import { nextReset } from './catalogue/schedule.js'

/** A leaderboard's operator, as the catalogue resolves it (CONTRACT §5). */
export type Operator = 'best' | 'set' | 'incr'
/** `desc`: higher scores rank first; `asc`: lower scores rank first. */
export type SortOrder = 'desc' | 'asc'

/** The two numbers a record holds; both integers from 0 to 2^53-1. */
export interface Scores {
  score: number
  subscore: number
}

/** A record's place in the ranking: its scores and its owner (the final tie-breaker). */
export interface RankKey extends Scores {
  ownerId: string
}

/**
 * The stored scores after a write with Nakama's operator semantics (nakama-api.md §3.1), or null
 * when the write changes nothing (then the record, its metadata and username stay as they were).
 * A first write stores the values as given, whatever the operator.
 */
export function applyOperator(old: Scores | undefined, write: Scores, operator: Operator, order: SortOrder): Scores | null {
  if (!old) return { score: write.score, subscore: write.subscore }
  switch (operator) {
    case 'best': {
      // Score and subscore are kept independently: 100/5 then 90/9 stores 100/9 (Nakama's quirk).
      const better = order === 'desc' ? Math.max : Math.min
      const next = { score: better(old.score, write.score), subscore: better(old.subscore, write.subscore) }
      return sameScores(next, old) ? null : next
    }
    case 'set':
      return sameScores(write, old) ? null : { score: write.score, subscore: write.subscore }
    case 'incr':
      if (write.score === 0 && write.subscore === 0) return null
      return { score: old.score + write.score, subscore: old.subscore + write.subscore }
  }
}

function sameScores(a: Scores, b: Scores): boolean {
  return a.score === b.score && a.subscore === b.subscore
}

/**
 * Rank order: negative when `a` ranks before `b`. Score, then subscore, then owner id, all in the
 * sort direction, as Nakama's rank cache orders them (nakama-api.md §3.3). Owner ids compare by
 * UTF-16 code units, which equals byte order for the ASCII ids both backends issue.
 */
export function compareRank(a: RankKey, b: RankKey, order: SortOrder): number {
  const sign = order === 'desc' ? -1 : 1
  if (a.score !== b.score) return a.score < b.score ? -sign : sign
  if (a.subscore !== b.subscore) return a.subscore < b.subscore ? -sign : sign
  if (a.ownerId === b.ownerId) return 0
  return a.ownerId < b.ownerId ? -sign : sign
}

/** A comparator bound to one sort order, for the rank index. */
export function rankComparator(order: SortOrder): (a: RankKey, b: RankKey) => number {
  return order === 'desc' ? (a, b) => compareRank(a, b, 'desc') : (a, b) => compareRank(a, b, 'asc')
}

/**
 * A record's expiry for a write at `now` (Unix ms): the next fire time of the reset schedule after
 * `now`, cron evaluated in UTC; 0 (never) without a schedule (nakama-api.md §3.4). A schedule
 * that never fires again (a past date) leaves records in one endless period.
 */
export function nextExpiry(resetSchedule: string | null, now: number): number {
  return nextReset(resetSchedule, now) ?? 0
}

/** The largest score or subscore: both backends keep integers exact up to here (CONTRACT §3). */
export const MAX_SCORE = Number.MAX_SAFE_INTEGER
