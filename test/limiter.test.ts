import t from 'tap'
import { MemoryLimiter, RENAME_RULE, take, type Bucket, type Rule } from '../lib/limiter.js'
import { SigninLimit } from '../lib/platform/signin-limit.js'

const HOUR = 3_600_000
const T0 = 1_700_000_000_000

interface Case {
  name: string
  rule: Rule
  bucket: Bucket | undefined
  now: number
  allowed: boolean
  tokens: number
  waitMs: number
}

// One token every 20 minutes for the rename rule (3 per hour).
const cases: Case[] = [
  { name: 'a missing bucket is full', rule: RENAME_RULE, bucket: undefined, now: T0, allowed: true, tokens: 2, waitMs: 0 },
  { name: 'the last token can be taken', rule: RENAME_RULE, bucket: { tokens: 1, updatedAt: T0 }, now: T0, allowed: true, tokens: 0, waitMs: 0 },
  { name: 'an empty bucket refuses and waits a whole token', rule: RENAME_RULE, bucket: { tokens: 0, updatedAt: T0 }, now: T0, allowed: false, tokens: 0, waitMs: HOUR / 3 },
  { name: 'half a token waits half the interval of one', rule: RENAME_RULE, bucket: { tokens: 0.5, updatedAt: T0 }, now: T0, allowed: false, tokens: 0.5, waitMs: HOUR / 6 },
  { name: 'refill is proportional to time (10 min = half a token)', rule: RENAME_RULE, bucket: { tokens: 0, updatedAt: T0 }, now: T0 + 600_000, allowed: false, tokens: 0.5, waitMs: 600_000 },
  { name: 'after 20 minutes one token is back', rule: RENAME_RULE, bucket: { tokens: 0, updatedAt: T0 }, now: T0 + HOUR / 3, allowed: true, tokens: 0, waitMs: 0 },
  { name: 'fractions carry over (0.5 + 10 min)', rule: RENAME_RULE, bucket: { tokens: 0.5, updatedAt: T0 }, now: T0 + 600_000, allowed: true, tokens: 0, waitMs: 0 },
  { name: 'refill never passes capacity', rule: RENAME_RULE, bucket: { tokens: 0, updatedAt: T0 }, now: T0 + 10 * HOUR, allowed: true, tokens: 2, waitMs: 0 },
  { name: 'a clock going back refills nothing', rule: RENAME_RULE, bucket: { tokens: 0, updatedAt: T0 }, now: T0 - HOUR, allowed: false, tokens: 0, waitMs: HOUR / 3 },
  { name: 'the wait rounds up to a whole millisecond', rule: { capacity: 1, refill: 3, intervalMs: 1000 }, bucket: { tokens: 0, updatedAt: T0 }, now: T0, allowed: false, tokens: 0, waitMs: 334 },
  { name: 'a rule of 10 per second', rule: { capacity: 10, refill: 10, intervalMs: 1000 }, bucket: { tokens: 0.25, updatedAt: T0 }, now: T0 + 50, allowed: false, tokens: 0.75, waitMs: 25 },
]

t.test('take(): a table of buckets, rules and clocks', async (t) => {
  for (const c of cases) {
    const result = take(c.bucket, c.rule, c.now)
    t.equal(result.allowed, c.allowed, `${c.name}: allowed`)
    t.ok(Math.abs(result.bucket.tokens - c.tokens) < 1e-9, `${c.name}: ${result.bucket.tokens} tokens left, expected ${c.tokens}`)
    t.equal(result.waitMs, c.waitMs, `${c.name}: wait`)
  }
})

t.test('take() never changes the bucket it is given', async (t) => {
  const bucket = { tokens: 1, updatedAt: T0 }
  take(bucket, RENAME_RULE, T0 + 1000)
  t.same(bucket, { tokens: 1, updatedAt: T0 })
})

t.test('three renames pass, the fourth waits 20 minutes, and one passes again after them', async (t) => {
  let bucket: Bucket | undefined
  const allowed: boolean[] = []
  for (let i = 0; i < 4; i++) {
    const result = take(bucket, RENAME_RULE, T0 + i * 1000)
    bucket = result.bucket
    allowed.push(result.allowed)
    if (i === 3) t.equal(result.waitMs, HOUR / 3 - 3000, 'the wait counts the refill since the first take')
  }
  t.same(allowed, [true, true, true, false])
  t.equal(take(bucket, RENAME_RULE, T0 + 2000 + HOUR / 3).allowed, true)
})

t.test('MemoryLimiter keeps a bucket per key; peek does not spend', async (t) => {
  const limiter = new MemoryLimiter({ capacity: 2, refill: 1, intervalMs: 1000 })
  t.equal(limiter.take('a', T0).allowed, true)
  t.equal(limiter.take('a', T0).allowed, true)
  t.same(limiter.peek('a', T0), { bucket: { tokens: 0, updatedAt: T0 }, allowed: false, waitMs: 1000 })
  t.same(limiter.take('a', T0), { bucket: { tokens: 0, updatedAt: T0 }, allowed: false, waitMs: 1000 })
  t.equal(limiter.take('b', T0).allowed, true, 'another key has its own bucket')
  t.equal(limiter.peek('a', T0 + 1000).allowed, true)
  t.equal(limiter.take('a', T0 + 1000).allowed, true)
})

t.test('SigninLimit: 10 failures in a minute block the address until the oldest is a minute old', async (t) => {
  const limit = new SigninLimit()
  for (let i = 0; i < 10; i++) {
    t.equal(limit.waitMs('10.0.0.1', T0 + i * 1000), 0, `attempt ${i + 1} may try`)
    limit.fail('10.0.0.1', T0 + i * 1000)
  }
  t.equal(limit.waitMs('10.0.0.1', T0 + 10_000), 50_000, 'the 11th waits until the first failure is a minute old')
  t.equal(limit.waitMs('10.0.0.2', T0 + 10_000), 0, 'another address is not blocked')
  t.equal(limit.waitMs('10.0.0.1', T0 + 59_999), 1)
  t.equal(limit.waitMs('10.0.0.1', T0 + 60_000), 0, 'free once the oldest failure has aged out')
  limit.fail('10.0.0.1', T0 + 60_000)
  t.equal(limit.waitMs('10.0.0.1', T0 + 60_000), 1000, 'one more failure blocks again until the second-oldest ages out')
  t.equal(limit.waitMs('10.0.0.1', T0 + 200_000), 0, 'a quiet minute forgets everything')
})

t.test('SigninLimit: a begun check counts as a failure until released', async (t) => {
  const limit = new SigninLimit()
  for (let i = 0; i < 10; i++) t.equal(limit.begin('a', T0 + i), 0, `check ${i + 1} begins`)
  t.equal(limit.begin('a', T0 + 10), 59_990, 'the 11th waits while ten are in flight')
  t.equal(limit.begin('b', T0 + 10), 0, 'another address is not held')
  limit.release('a', T0 + 3)
  t.equal(limit.waitMs('a', T0 + 10), 0, 'a released check frees its place')
  t.equal(limit.begin('a', T0 + 11), 0)
  t.equal(limit.waitMs('a', T0 + 12), 59_988, 'and the next one takes it')
  limit.release('a', T0 + 999)
  t.equal(limit.waitMs('a', T0 + 12), 59_988, 'releasing a check never begun changes nothing')
  for (let i = 0; i < 10; i++) limit.release('b', T0 + 10)
  t.equal(limit.waitMs('b', T0 + 10), 0)
})

t.test('SigninLimit: failures spread over more than a minute never block', async (t) => {
  const limit = new SigninLimit()
  for (let i = 0; i < 30; i++) {
    t.equal(limit.waitMs('a', T0 + i * 7000), 0)
    limit.fail('a', T0 + i * 7000)
  }
})
