import { rateLimited } from '../http/errors.js'
import { MemoryLimiter, type Rule } from '../limiter.js'

/**
 * Writes per user that cost a row each (submissions, launches): 20 a second with bursts of 40, per
 * platform process. A guard against floods (one account filling the disk), not a rule of the
 * contract, so it stays in memory: a write costs no extra backend call.
 */
const FLOOD_RULE: Rule = Object.freeze({ capacity: 40, refill: 20, intervalMs: 1000 })

/**
 * A check for one kind of write: throws 429 RATE_LIMITED ("too many <what>") past the rule. Its
 * `now` is monotonic (performance.now()): in memory nothing needs the wall clock, and a step of it
 * must not lock a player out for as long as the step.
 */
export function floodGuard(what: string): (userId: string, now: number) => void {
  const limiter = new MemoryLimiter(FLOOD_RULE)
  return (userId, now) => {
    const taken = limiter.take(userId, now)
    if (!taken.allowed) throw rateLimited(`too many ${what}`, taken.waitMs)
  }
}
