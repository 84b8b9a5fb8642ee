import type { LeaderboardConfig } from '../backend/backend.js'
import type { Game } from './catalogue.js'
import { Representation } from './serialize.js'
import { nextReset } from './schedule.js'

/** A game with its own resolved leaderboards, enough to serialize its detail at any time. */
export interface DetailSource {
  game: Game
  boards: LeaderboardConfig[]
}

/**
 * Serialize one detail response (CONTRACT §3): the list entry's fields plus `leaderboardDetails`.
 * The bytes expire at the earliest nextResetAt, after which they no longer tell the truth.
 */
function serializeDetail(source: DetailSource, now: number): Representation {
  const leaderboardDetails: Record<string, unknown> = {}
  let expiresAt = Infinity
  for (const board of source.boards) {
    const next = nextReset(board.resetSchedule, now)
    if (next !== null) expiresAt = Math.min(expiresAt, next)
    leaderboardDetails[board.id] = {
      operator: board.operator,
      sortOrder: board.sortOrder,
      resetSchedule: board.resetSchedule,
      nextResetAt: next === null ? null : new Date(next).toISOString(),
    }
  }
  return Representation.json({ success: true, ...source.game, leaderboardDetails }, { expiresAt })
}

/**
 * Details serialized at load, each re-serialized (once) by the first request after its earliest
 * nextResetAt has passed, so a request still only picks bytes almost always; and by the first
 * request that finds the clock earlier than when they were made (stepped back: the next reset
 * they name may then be one too far).
 */
export class DetailCache {
  readonly #sources: ReadonlyMap<string, DetailSource>
  readonly #made = new Map<string, { rep: Representation; at: number }>()

  constructor(sources: ReadonlyMap<string, DetailSource>, now: number) {
    this.#sources = sources
    for (const [id, source] of sources) this.#made.set(id, { rep: serializeDetail(source, now), at: now })
  }

  /** The detail of `id` as true at `now`; undefined for an unknown id. */
  get(id: string, now: number): Representation | undefined {
    const made = this.#made.get(id)
    if (made === undefined || (made.at <= now && now < made.rep.expiresAt)) return made?.rep
    const rep = serializeDetail(this.#sources.get(id)!, now)
    this.#made.set(id, { rep, at: now })
    return rep
  }
}
