import type { LeaderboardConfig } from '../backend/backend.js'
import type { BoardConfigInput } from './manifest.js'
import { withoutLeadingZeros } from './schedule.js'

// CONTRACT §5: the operator a type implies when the config names none.
const INCR_TYPES = new Set(['incr', 'wins', 'kills', 'win_loss'])
const SET_TYPES = new Set(['set', 'elo', 'rating', 'mastery', 'wealth', 'hashrate'])

/** Resolve one leaderboard's config as written (or absent) into what the backend runs (CONTRACT §5). */
export function resolveLeaderboard(id: string, input: BoardConfigInput | undefined): LeaderboardConfig {
  const type = input?.type
  const operator = input?.operator ?? (type && INCR_TYPES.has(type) ? 'incr' : type && SET_TYPES.has(type) ? 'set' : 'best')
  const written = input?.sortOrder
  const sortOrder =
    written === 'desc' || written === 'descending' ? 'desc'
    : written === 'asc' || written === 'ascending' ? 'asc'
    : type === 'time_best' ? 'asc' : 'desc'
  return {
    id,
    operator,
    sortOrder,
    // Whitespace is not meaning: two games writing one schedule differently still agree.
    // Spaces and leading zeros normalized: `0 0 * * 01` in one game and `0 0 * * 1` in another are one schedule.
    resetSchedule: typeof input?.resetSchedule === 'string' ? withoutLeadingZeros(input.resetSchedule.trim().split(/\s+/).join(' ')) : null,
    authoritative: input?.authoritative ?? false,
  }
}

/** The fields that differ between two resolved configs of one id, e.g. `operator best vs set`; empty when equal. */
export function configDifference(a: LeaderboardConfig, b: LeaderboardConfig): string[] {
  const keys = ['operator', 'sortOrder', 'resetSchedule', 'authoritative'] as const
  return keys.filter((k) => a[k] !== b[k]).map((k) => `${k} ${JSON.stringify(a[k])} vs ${JSON.stringify(b[k])}`)
}
