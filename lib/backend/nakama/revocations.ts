import { RevokeAnswer, RevokedAnswer } from './answers.js'
import type { NakamaClient } from './client.js'

/** How long a "not revoked" answer is trusted: a logout on another instance shows here within this. */
const ACTIVE_TTL_MS = 1_000
/** Past this many remembered sessions, forget the ones whose answer has lapsed, or all. */
const MAX_ENTRIES = 50_000

/**
 * What this instance knows of a session: logged out, until its token's expiry (Unix ms); or not,
 * trusted until a deadline on the monotonic clock (performance.now()), which a wall-clock step
 * can neither stretch nor cut.
 */
type Entry = { revoked: true; expiresAt: number } | { revoked: false; trustedUntil: number }

/** Whether `entry` still answers at `now` (Unix ms). */
function holds(entry: Entry, now: number): boolean {
  return entry.revoked ? entry.expiresAt > now : entry.trustedUntil > performance.now()
}

/**
 * Revocations kept in Nakama storage by the module (one object per logged-out token id), with a
 * short cache: every request checks its session, and a revocation never un-happens.
 */
export class Revocations {
  readonly #cache = new Map<string, Entry>()
  /** `maxEntries`: past this many remembered sessions, forget lapsed answers, or all. */
  constructor(readonly client: NakamaClient, readonly maxEntries = MAX_ENTRIES) {}

  /**
   * Whether the session `tid` of user `uid` (expiring at `exp`, unix seconds) has been logged out
   * on any instance, or its account deleted or banned in Nakama.
   */
  async isRevoked(uid: string, tid: string, exp: number, now: number): Promise<boolean> {
    const hit = this.#cache.get(tid)
    if (hit && holds(hit, now)) return hit.revoked
    const answer = await this.client.rpc('playfield_session_revoked', { userId: uid, tid, exp }, RevokedAnswer, { idempotent: true })
    this.#remember(tid, answer.revoked ? { revoked: true, expiresAt: exp * 1000 } : { revoked: false, trustedUntil: performance.now() + ACTIVE_TTL_MS }, now)
    return answer.revoked
  }

  /** Record a logout durably (storage) and in Nakama's own session cache, then here. */
  async revoke(session: { uid: string; tid: string; exp: number; token: string | undefined; refreshToken: string }): Promise<void> {
    await this.client.rpc('playfield_revoke_session', {
      userId: session.uid, tid: session.tid, exp: session.exp, token: session.token, refreshToken: session.refreshToken,
    }, RevokeAnswer)
    this.#remember(session.tid, { revoked: true, expiresAt: session.exp * 1000 }, Date.now())
  }

  #remember(tid: string, entry: Entry, now: number): void {
    this.#cache.set(tid, entry)
    if (this.#cache.size <= this.maxEntries) return
    for (const [key, value] of this.#cache) if (!holds(value, now)) this.#cache.delete(key)
    // A logout is remembered until its session expires (30 days, say), and Nakama's storage has
    // them all: start over rather than grow, and sweep at most once per maxEntries / 2 answers.
    if (this.#cache.size > this.maxEntries / 2) this.#cache.clear()
  }
}
