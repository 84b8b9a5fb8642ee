import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto'

// scrypt cost: N=2^14, r=8, p=1 (16 MiB, about 60 ms on this project's 2-core CI machine).
// N=2^15 doubled that; a sign-in should stay well under a quarter second with 20 in flight.
/** scrypt's cost. The parameters are stored in each hash, so raising them later keeps old hashes working. */
export const COST = { N: 16_384, r: 8, p: 1 } as const
const SALT_BYTES = 16
const KEY_BYTES = 32

function derive(password: string, salt: Buffer, cost: { N: number; r: number; p: number }): Promise<Buffer> {
  const options: ScryptOptions = { ...cost, maxmem: 256 * cost.N * cost.r }
  // Asynchronous: scrypt runs on libuv's thread pool, so a sign-in never blocks the event loop.
  return new Promise((resolve, reject) => {
    scrypt(password, salt, KEY_BYTES, options, (err, key) => (err ? reject(err) : resolve(key)))
  })
}

/** A new salted hash of `password`: `scrypt$N$r$p$<salt>$<key>` (base64url). */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES)
  const key = await derive(password, salt, COST)
  return ['scrypt', COST.N, COST.r, COST.p, salt.toString('base64url'), key.toString('base64url')].join('$')
}

/** Whether `password` matches `stored`, compared in constant time; false for a malformed hash. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, key] = stored.split('$')
  if (scheme !== 'scrypt' || !salt || !key) return false
  const expected = Buffer.from(key, 'base64url')
  const actual = await derive(password, Buffer.from(salt, 'base64url'), { N: Number(n), r: Number(r), p: Number(p) })
  return actual.length === expected.length && timingSafeEqual(actual, expected)
}

let dummy: Promise<string> | undefined

/**
 * Spend the time of one verification against a throw-away hash: login with an unknown name (or
 * a guest's, which has no password) costs what a wrong password costs, so timing cannot tell
 * whether a name exists. Always false.
 */
export async function verifyNothing(password: string): Promise<false> {
  dummy ??= hashPassword(randomBytes(16).toString('hex'))
  await verifyPassword(password, await dummy)
  return false
}
