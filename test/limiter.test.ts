import t from 'tap'
import { MemoryLimiter, RENAME_RULE, take, type Bucket, type Rule } from '../lib/limiter.js'
import { SigninLimit, type FailureWindows } from '../lib/platform/signin-limit.js'
import { floodGuard } from '../lib/platform/flood-guard.js'
import { HttpError } from '../lib/http/errors.js'

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

t.test('MemoryLimiter keeps a bucket per key and refills it with time', async (t) => {
  const limiter = new MemoryLimiter({ capacity: 2, refill: 1, intervalMs: 1000 })
  t.equal(limiter.take('a', T0).allowed, true)
  t.equal(limiter.take('a', T0).allowed, true)
  t.same(limiter.take('a', T0), { bucket: { tokens: 0, updatedAt: T0 }, allowed: false, waitMs: 1000 })
  t.equal(limiter.take('b', T0).allowed, true, 'another key has its own bucket')
  t.same(limiter.take('a', T0 + 1000), { bucket: { tokens: 0, updatedAt: T0 + 1000 }, allowed: true, waitMs: 0 })
  t.equal(limiter.take('a', T0 + 1000).allowed, false, 'the one token that came back is spent')
})

t.test('flood guards: 40 at once and 20 a second per user, each kind of write with its own allowance', async (t) => {
  // README: each player may submit 20 times a second with bursts of 40, and launch as many, "as for
  // submissions": a player whose launches are limited may still submit a score, and back.
  const launches = floodGuard('launches')
  const submissions = floodGuard('submissions')
  const refusal = (guard: (userId: string, now: number) => void, userId: string, now: number): unknown => {
    try {
      guard(userId, now)
      return null
    } catch (err) {
      return err instanceof HttpError ? { status: err.status, code: err.code, message: err.message, headers: err.headers } : err
    }
  }
  for (let i = 0; i < 40; i++) t.equal(refusal(launches, 'u-1', T0), null, `launch ${i + 1} of the burst`)
  t.same(refusal(launches, 'u-1', T0), { status: 429, code: 'RATE_LIMITED', message: 'too many launches', headers: { 'retry-after': '1' } }, 'the 41st launch')
  for (let i = 0; i < 40; i++) t.equal(refusal(submissions, 'u-1', T0), null, `submission ${i + 1}: launches spent none of them`)
  t.same(refusal(submissions, 'u-1', T0), { status: 429, code: 'RATE_LIMITED', message: 'too many submissions', headers: { 'retry-after': '1' } }, 'the 41st submission')
  t.equal(refusal(launches, 'u-2', T0), null, 'another user launches')
  t.equal(refusal(submissions, 'u-2', T0), null, 'and submits')
  for (let i = 0; i < 20; i++) t.equal(refusal(launches, 'u-1', T0 + 1000), null, `a second later, launch ${i + 1} of 20`)
  t.match(refusal(launches, 'u-1', T0 + 1000), { status: 429 }, 'and no 21st')
})

/** Failure windows in memory, as the backends keep them (the backends' own are tested with them). */
function memoryWindows(): FailureWindows {
  const windows = new Map<string, number[]>()
  return async (key, now, windowMs, record) => {
    let times = (windows.get(key) ?? []).filter((time) => time > now - windowMs && time <= now + windowMs)
    if (record) windows.set(key, (times = [...times, now].sort((a, b) => a - b).slice(-record.keep)))
    return times
  }
}

t.test('SigninLimit: 10 failures in a minute block the address until the oldest is a minute old', async (t) => {
  const limit = new SigninLimit(memoryWindows())
  for (let i = 0; i < 10; i++) {
    t.equal(await limit.waitMs('10.0.0.1', T0 + i * 1000), 0, `attempt ${i + 1} may try`)
    await limit.fail('10.0.0.1', T0 + i * 1000)
  }
  t.equal(await limit.waitMs('10.0.0.1', T0 + 10_000), 50_000, 'the 11th waits until the first failure is a minute old')
  t.equal(await limit.waitMs('10.0.0.2', T0 + 10_000), 0, 'another address is not blocked')
  t.equal(await limit.waitMs('10.0.0.1', T0 + 59_999), 1)
  t.equal(await limit.waitMs('10.0.0.1', T0 + 60_000), 0, 'free once the oldest failure has aged out')
  await limit.fail('10.0.0.1', T0 + 60_000)
  t.equal(await limit.waitMs('10.0.0.1', T0 + 60_000), 1000, 'one more failure blocks again until the second-oldest ages out')
  t.equal(await limit.waitMs('10.0.0.1', T0 + 200_000), 0, 'a quiet minute forgets everything')
})

t.test('SigninLimit: failures stamped ahead by less than the window hold until a minute past their stamp; further ahead (a clock stepped back) they do not count', async (t) => {
  const limit = new SigninLimit(memoryWindows())
  for (let i = 0; i < 10; i++) await limit.fail('10.0.0.1', T0 + 30_000)
  t.equal(await limit.waitMs('10.0.0.1', T0), 90_000, "ahead by 30 s (another instance's clock): Retry-After tells the whole wait")
  t.equal(await limit.waitMs('10.0.0.1', T0 + 90_000), 0, 'and it is over then')
  for (let i = 0; i < 10; i++) await limit.fail('10.0.0.2', T0 + HOUR)
  t.equal(await limit.waitMs('10.0.0.2', T0), 0, 'ahead by an hour: not a lockout for the hour')
  for (let i = 0; i < 10; i++) {
    t.equal(await limit.waitMs('10.0.0.2', T0 + i), 0, `failure ${i + 1} after the step may try`)
    await limit.fail('10.0.0.2', T0 + i)
  }
  t.equal(await limit.waitMs('10.0.0.2', T0 + 10), 59_990, 'ten failures after the step block as ever')
})

t.test('SigninLimit: checks in flight are held to the failures left; the rest wait for a place', async (t) => {
  const limit = new SigninLimit(memoryWindows())
  const clock = (): number => T0
  for (let i = 0; i < 7; i++) await limit.fail('a', T0)
  const places = await Promise.all([0, 1, 2].map(() => limit.acquire('a', clock)))
  t.ok(places.every((p) => p.ok), 'three failures left: three checks run at once')
  t.same(limit.inFlight('a'), { running: 3, waiting: 0 })
  let fourth: Awaited<ReturnType<SigninLimit['acquire']>> | undefined
  const waiting = limit.acquire('a', clock).then((p) => (fourth = p))
  await new Promise((r) => setImmediate(r))
  t.equal(fourth, undefined, 'a fourth waits')
  t.same(limit.inFlight('a'), { running: 3, waiting: 1 })
  t.equal(await limit.waitMs('a', T0), 0, 'checks in flight are not failures: a guest may still sign in')
  const b = await limit.acquire('b', clock)
  t.ok(b.ok, 'another address is not held')
  if (b.ok) await b.release(false, T0)
  const [first, second, third] = places as Extract<(typeof places)[number], { ok: true }>[]
  await first!.release(false, T0)
  await waiting
  t.ok(fourth?.ok, 'a check that succeeds gives its place to the one waiting')
  await first!.release(true, T0)
  t.same(limit.inFlight('a'), { running: 3, waiting: 0 }, 'a second release of one place changes nothing')
  await second!.release(true, T0)
  await third!.release(true, T0)
  if (fourth?.ok) await fourth.release(true, T0)
  t.same(limit.inFlight('a'), { running: 0, waiting: 0 })
  t.equal(await limit.waitMs('a', T0), 60_000, 'three failures more make ten: the address is limited')
  t.same(await limit.acquire('a', clock), { ok: false, waitMs: 60_000 })
})

t.test('SigninLimit: waiting checks answer the limit once the checks in flight have failed', async (t) => {
  const limit = new SigninLimit(memoryWindows())
  const clock = (): number => T0
  const running = await Promise.all(Array.from({ length: 10 }, () => limit.acquire('a', clock)))
  const waiting = Array.from({ length: 20 }, () => limit.acquire('a', clock))
  await new Promise((r) => setImmediate(r))
  t.same(limit.inFlight('a'), { running: 10, waiting: 20 })
  for (const place of running) if (place.ok) await place.release(true, T0 + 5)
  t.same(await Promise.all(waiting), Array(20).fill({ ok: false, waitMs: 60_000 }), 'all twenty are refused until the first failure is a minute old')
  t.same(limit.inFlight('a'), { running: 0, waiting: 0 }, 'nothing is left behind')
})

t.test('SigninLimit: with a slow backend, reads that miss a failure recorded meanwhile still let only 10 checks run', async (t) => {
  // Each call to the window answers after a few milliseconds, as a Nakama RPC does: a read may
  // start before a failure is recorded and answer after that failure's check has let go of its place.
  const inner = memoryWindows()
  const slow: FailureWindows = async (key, now, windowMs, record) => {
    await new Promise((r) => setTimeout(r, 1 + Math.floor(Math.random() * 6)))
    const times = await inner(key, now, windowMs, record)
    await new Promise((r) => setTimeout(r, 1 + Math.floor(Math.random() * 6)))
    return times
  }
  for (let run = 0; run < 5; run++) {
    const limit = new SigninLimit(slow)
    const address = `slow-${run}`
    let checked = 0
    const attempts = Array.from({ length: 30 }, async () => {
      const place = await limit.acquire(address, () => T0)
      if (!place.ok) return 429
      checked++
      await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 4)))
      await place.release(true, T0)
      return 401
    })
    const statuses = (await Promise.all(attempts)).sort()
    t.same(statuses, [...Array(10).fill(401), ...Array(20).fill(429)], `run ${run + 1}: 10 checked, 20 refused`)
    t.equal(checked, 10)
    t.same(limit.inFlight(address), { running: 0, waiting: 0 })
  }
})

/**
 * A SigninLimit over a backend that fails while `setDown(true)`: address 'a' holds all 10 places,
 * and `count` more checks wait (each resolving to its place or the failure's message).
 */
async function fullWithWaiting(count: number) {
  const inner = memoryWindows()
  let down = false
  const flaky: FailureWindows = async (key, now, windowMs, record) => {
    if (down) throw new Error('backend down')
    return inner(key, now, windowMs, record)
  }
  const limit = new SigninLimit(flaky)
  const clock = (): number => T0
  const places = await Promise.all(Array.from({ length: 10 }, () => limit.acquire('a', clock)))
  const waiting = Array.from({ length: count }, () => limit.acquire('a', clock).then((p) => p, (err: Error) => err.message))
  await new Promise((r) => setImmediate(r))
  return { limit, clock, places, waiting, setDown: (value: boolean) => (down = value) }
}

t.test('SigninLimit: a backend that fails leaves no place held and no check waiting for good', async (t) => {
  const { limit, clock, places, waiting, setDown } = await fullWithWaiting(3)
  t.same(limit.inFlight('a'), { running: 10, waiting: 3 })
  setDown(true)
  const first = places[0]!
  if (first.ok) await t.rejects(first.release(true, T0), /backend down/, 'a failure that cannot be recorded fails the release')
  for (const place of places.slice(1)) if (place.ok) await place.release(false, T0)
  t.same(await Promise.all(waiting), ['backend down', 'backend down', 'backend down'], 'every waiting check hears of it')
  t.same(limit.inFlight('a'), { running: 0, waiting: 0 }, 'nothing held')
  setDown(false)
  t.ok((await limit.acquire('a', clock)).ok, 'and the address signs in once the backend is back')
})

t.test('SigninLimit: at most 100 checks wait per address; more are refused for a second', async (t) => {
  const limit = new SigninLimit(memoryWindows())
  const clock = (): number => T0
  const tick = (): Promise<void> => new Promise((r) => setImmediate(r))
  let places = await Promise.all(Array.from({ length: 10 }, () => limit.acquire('a', clock)))
  const waiting = Array.from({ length: 100 }, () => limit.acquire('a', clock))
  await tick()
  t.same(await limit.acquire('a', clock), { ok: false, waitMs: 1000, busy: true }, 'the 101st waiting check is refused')
  // Each round of ten successes hands its places to ten of those waiting.
  for (let round = 0; round < 10; round++) {
    for (const place of places) if (place.ok) await place.release(false, T0)
    await tick()
    t.same(limit.inFlight('a'), { running: 10, waiting: 90 - round * 10 }, `round ${round + 1}`)
    places = []
    for (const pending of waiting.splice(0, 10)) places.push(await pending)
  }
  for (const place of places) if (place.ok) await place.release(false, T0)
  t.same(limit.inFlight('a'), { running: 0, waiting: 0 })
})

t.test('SigninLimit: failures spread over more than a minute never block', async (t) => {
  const limit = new SigninLimit(memoryWindows())
  for (let i = 0; i < 30; i++) {
    t.equal(await limit.waitMs('a', T0 + i * 7000), 0)
    await limit.fail('a', T0 + i * 7000)
  }
})

t.test('take(): a clock that goes back and then forward again refills only the time that really passed', async (t) => {
  // The bucket keeps its latest time: measured from the earlier clock, the hour between would be
  // counted twice and the rename bucket would hand out three tokens that never refilled.
  const back = take({ tokens: 0, updatedAt: T0 }, RENAME_RULE, T0 - HOUR)
  t.same(back.bucket, { tokens: 0, updatedAt: T0 }, 'the bucket keeps its time')
  const again = take(back.bucket, RENAME_RULE, T0)
  t.same([again.allowed, again.waitMs], [false, HOUR / 3], 'back at the first time: still empty, a whole token to wait')
})

t.test('MemoryLimiter: its sweep of many keys forgets only buckets that are full again', async (t) => {
  const limiter = new MemoryLimiter({ capacity: 2, refill: 1, intervalMs: 1000 })
  limiter.take('spent', T0)
  limiter.take('spent', T0)
  limiter.take('half', T0)
  // Past 100,000 keys the limiter drops the buckets that hold no information; 'spent' and 'half' still do.
  for (let i = 0; i < 100_001; i++) limiter.take(`k${i}`, T0)
  t.same(limiter.take('spent', T0 + 500), { bucket: { tokens: 0.5, updatedAt: T0 + 500 }, allowed: false, waitMs: 500 }, 'the emptied bucket is kept')
  t.same(limiter.take('half', T0 + 500), { bucket: { tokens: 0.5, updatedAt: T0 + 500 }, allowed: true, waitMs: 0 }, 'the bucket with a token left is kept, not taken for a full one')
})

t.test('SigninLimit: a check woken for a place the backend then cannot answer passes the place on', async (t) => {
  const { limit, places, waiting, setDown } = await fullWithWaiting(2)
  t.same(limit.inFlight('a'), { running: 10, waiting: 2 })
  setDown(true)
  // One place is freed: the check it wakes cannot read the failures, so the next one is woken in its stead.
  const first = places[0]!
  if (first.ok) await first.release(false, T0)
  await new Promise((r) => setImmediate(r))
  t.same(limit.inFlight('a'), { running: 9, waiting: 0 }, 'neither check waits on, though the other nine still hold their places')
  for (const place of places.slice(1)) if (place.ok) await place.release(false, T0)
  t.same(await Promise.all(waiting), ['backend down', 'backend down'], 'both hear of the failure')
  t.same(limit.inFlight('a'), { running: 0, waiting: 0 })
})

t.test('SigninLimit: failures a read-only backend will not record still count, on this instance, for their minute', async (t) => {
  const inner = memoryWindows()
  let readOnly = true
  const limit = new SigninLimit(async (key, now, windowMs, record) => {
    if (record && readOnly) throw new Error('disk full')
    return inner(key, now, windowMs, record)
  })
  for (let i = 0; i < 10; i++) {
    const place = await limit.acquire('a', () => T0 + i)
    t.ok(place.ok, `check ${i + 1} runs`)
    if (place.ok) await t.rejects(place.release(true, T0 + i), /disk full/, `failure ${i + 1}: the backend's error reaches the sign-in`)
  }
  t.equal(await limit.waitMs('a', T0 + 10), 60_000 - 10, 'the 11th waits for the first failure to be a minute old')
  t.match(await limit.acquire('a', () => T0 + 10), { ok: false, waitMs: 60_000 - 10 }, 'no check runs')
  t.equal(await limit.waitMs('b', T0 + 10), 0, 'another address is free')
  readOnly = false
  t.equal(await limit.waitMs('a', T0 + 20), 60_000 - 20, 'the backend writing again forgets nothing')
  await limit.fail('a', T0 + 30_000)
  const kept = Array.from({ length: 10 }, (_, i) => T0 + i)
  t.same(await limit.fail('a', T0 + 30_001), [...kept, T0 + 30_000, T0 + 30_001], 'kept and recorded failures are counted together, in order')
  t.equal(await limit.waitMs('a', T0 + 59_999), 3, 'the wait follows the 10th newest of them (T0 + 2, a minute on)')
  t.equal(await limit.waitMs('a', T0 + 120_000), 0, 'a quiet minute forgets the kept ones too')
})
