/** A token-bucket rule: `capacity` tokens, refilled at `refill` tokens every `intervalMs`. */
export interface Rule {
  capacity: number
  refill: number
  intervalMs: number
}

/** A bucket's stored state: tokens left (may be fractional) as of `updatedAt` (Unix ms). */
export interface Bucket {
  tokens: number
  updatedAt: number
}

/** What take() decided and the bucket to store after it. */
export interface TakeResult {
  bucket: Bucket
  allowed: boolean
  /** Milliseconds until one token is available; 0 when allowed. */
  waitMs: number
}

/** CONTRACT §3: 3 accepted renames, refilled 3 per hour, per user. */
export const RENAME_RULE: Rule = Object.freeze({ capacity: 3, refill: 3, intervalMs: 3_600_000 })

/** Refill `bucket` up to `now` (a missing bucket is full); never reads the clock. */
function refill(bucket: Bucket | undefined, rule: Rule, now: number): Bucket {
  if (!bucket) return { tokens: rule.capacity, updatedAt: now }
  const elapsed = Math.max(0, now - bucket.updatedAt)
  const tokens = Math.min(rule.capacity, bucket.tokens + (elapsed * rule.refill) / rule.intervalMs)
  return { tokens, updatedAt: Math.max(now, bucket.updatedAt) }
}

/** Take one token: the new bucket, whether it was allowed, and the wait when it was not. */
export function take(bucket: Bucket | undefined, rule: Rule, now: number): TakeResult {
  const current = refill(bucket, rule, now)
  if (current.tokens >= 1) {
    return { bucket: { tokens: current.tokens - 1, updatedAt: current.updatedAt }, allowed: true, waitMs: 0 }
  }
  const waitMs = Math.ceil(((1 - current.tokens) * rule.intervalMs) / rule.refill)
  return { bucket: current, allowed: false, waitMs }
}

/** Buckets kept in this process, by key, for limits that need not outlive it (the submit and launch flood limits). */
export class MemoryLimiter {
  readonly #buckets = new Map<string, Bucket>()
  constructor(readonly rule: Rule) {}

  /** Take a token for `key` at `now`. */
  take(key: string, now: number): TakeResult {
    const result = take(this.#buckets.get(key), this.rule, now)
    this.#buckets.set(key, result.bucket)
    if (this.#buckets.size > 100_000) this.#sweep(now)
    return result
  }

  /** Drop buckets that have refilled completely: they hold no information. */
  #sweep(now: number): void {
    for (const [key, bucket] of this.#buckets) {
      if (refill(bucket, this.rule, now).tokens >= this.rule.capacity) this.#buckets.delete(key)
    }
  }
}
