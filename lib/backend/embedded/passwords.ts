import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto'
import { clientClosed, HttpError } from '../../http/errors.js'

// scrypt cost: N=2^14, r=8, p=1 (16 MiB, about 60 ms on this project's 2-core CI machine).
// N=2^15 doubled that; a sign-in should stay well under a quarter second with 20 in flight.
/** scrypt's cost. The parameters are stored in each hash, so raising them later keeps old hashes working. */
export const COST = { N: 16_384, r: 8, p: 1 } as const
const SALT_BYTES = 16
const KEY_BYTES = 32

/**
 * Runs at most `running` tasks at once and holds at most `waiting` more in order; past that a task
 * is refused at once with 503 BACKEND_UNAVAILABLE and `Retry-After: 1`. A task whose `signal`
 * aborts before it begins (its client closed the connection) leaves the queue and never runs: a
 * burst of sign-ins whose clients gave up and retried would otherwise fill the waiting places with
 * hashes no one waits for, and refuse the clients still there.
 */
export class HashQueue {
  #running = 0
  readonly #waiting: (() => void)[] = []

  constructor(readonly running: number, readonly waiting: number) {}

  async run<T>(task: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    if (signal?.aborted) throw clientClosed()
    if (this.#running < this.running) this.#running++
    else if (this.#waiting.length < this.waiting) await this.#turn(signal)
    else throw new HttpError(503, 'BACKEND_UNAVAILABLE', 'too many sign-ins at once; try again shortly', undefined, { 'retry-after': '1' })
    try {
      return await task()
    } finally {
      // The place goes straight to the oldest waiting task, or is freed.
      const next = this.#waiting.shift()
      if (next) next()
      else this.#running--
    }
  }

  /** Wait in line for a running place, handed over by a task that ends; leave the line if `signal` aborts. */
  #turn(signal: AbortSignal | undefined): Promise<void> {
    return new Promise((resolve, reject) => {
      const begin = (): void => {
        signal?.removeEventListener('abort', leave)
        resolve()
      }
      const leave = (): void => {
        this.#waiting.splice(this.#waiting.indexOf(begin), 1)
        reject(clientClosed())
      }
      signal?.addEventListener('abort', leave, { once: true })
      this.#waiting.push(begin)
    })
  }
}

/**
 * Every hash of this process. Two at once: libuv's pool has four threads, which file reads (the
 * screenshots) share, and queued hashes ahead of a read made it wait seconds under a burst of
 * sign-ins; on two cores two hashes use all the CPU anyway. The rest wait here, not in libuv's
 * queue, whose every item a process exit waits for (400 queued held a SIGTERM for 16 s). 256
 * waiting is about 8 s of hashing on the two-core CI machine.
 */
const hashes = new HashQueue(2, 256)

function derive(password: string, salt: Buffer, cost: { N: number; r: number; p: number }, signal: AbortSignal | undefined): Promise<Buffer> {
  const options: ScryptOptions = { ...cost, maxmem: 256 * cost.N * cost.r }
  // Asynchronous: scrypt runs on libuv's thread pool, so a sign-in never blocks the event loop.
  return hashes.run(() => new Promise((resolve, reject) => {
    scrypt(password, salt, KEY_BYTES, options, (err, key) => (err ? reject(err) : resolve(key)))
  }), signal)
}

/**
 * A new salted hash of `password`: `scrypt$N$r$p$<salt>$<key>` (base64url). Here and below,
 * `signal` is the client's connection (`connectionClosed`): closed before the hash begins, the
 * call throws 499 CLIENT_CLOSED instead.
 */
export async function hashPassword(password: string, signal?: AbortSignal): Promise<string> {
  const salt = randomBytes(SALT_BYTES)
  const key = await derive(password, salt, COST, signal)
  return ['scrypt', COST.N, COST.r, COST.p, salt.toString('base64url'), key.toString('base64url')].join('$')
}

/** Whether `password` matches `stored`, compared in constant time; false for a malformed hash. */
export async function verifyPassword(password: string, stored: string, signal?: AbortSignal): Promise<boolean> {
  const [scheme, n, r, p, salt, key] = stored.split('$')
  if (scheme !== 'scrypt' || !salt || !key) return false
  const expected = Buffer.from(key, 'base64url')
  const actual = await derive(password, Buffer.from(salt, 'base64url'), { N: Number(n), r: Number(r), p: Number(p) }, signal)
  return actual.length === expected.length && timingSafeEqual(actual, expected)
}

/**
 * A hash of a random password no one knows, at COST, made once for the source: a constant, so an
 * unknown name's check takes one place in the queue as a wrong password's does (made at the
 * first such login, it took a place of its own, and a burst after a start refused only unknown
 * names with 503, telling them apart).
 */
const DUMMY_HASH = 'scrypt$16384$8$1$WlWcSZDvSZSJ4qq7Rt9O-Q$K4-4kNLixnpfxonf5e1zOJFQ5ODxSj8eeTSCXUDT9Os'

/**
 * Spend the time of one verification against a throw-away hash: login with an unknown name (or
 * a guest's, which has no password) costs what a wrong password costs, and meets the same queue,
 * so neither timing nor a 503 can tell whether a name exists. Always false.
 */
export async function verifyNothing(password: string, signal?: AbortSignal): Promise<false> {
  await verifyPassword(password, DUMMY_HASH, signal)
  return false
}
