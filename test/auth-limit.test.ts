import t from 'tap'
import { setTimeout as sleep } from 'node:timers/promises'
import net from 'node:net'
import path from 'node:path'
import Database from 'better-sqlite3'
import { Client, startPlatform, tempDir } from './helpers/platform.js'
import { expectError, signUp } from './helpers/accounts.js'

const platform = await startPlatform()
t.teardown(() => platform.stop())

/** A client seen from `address` (the platform trusts X-Forwarded-For from loopback, the default TRUST_PROXY). */
function from(address: string): Client {
  const c = new Client(platform.url)
  const request = c.request.bind(c)
  c.request = (method, path, body, headers = {}) => request(method, path, body, { 'x-forwarded-for': address, ...headers })
  return c
}

await signUp(t, new Client(platform.url), 'Limited', 'right password')

t.test('10 failed sign-ins a minute from one address: the 11th attempt and every sign-in after is 429', async (t) => {
  const c = from('203.0.113.10')
  for (let i = 1; i <= 10; i++) {
    await expectError(t, await c.post('/api/auth/login', { username: 'Limited', password: 'wrong password' }), 401, 'INVALID_CREDENTIALS', `failure ${i}`)
  }
  const checks: [string, () => Promise<Response>][] = [
    ['login with the right password', () => c.post('/api/auth/login', { username: 'Limited', password: 'right password' })],
    ['login with a wrong one', () => c.post('/api/auth/login', { username: 'Limited', password: 'wrong password' })],
    ['guest', () => c.post('/api/auth/guest')],
    ['register', () => c.post('/api/auth/register', { username: 'newcomer', password: 'right password' })],
    // Refused before the body is read: a sign-in from a limited address is 429 whatever it holds.
    ['login with a body that fails the schema', () => c.post('/api/auth/login', { username: '' })],
    ['login with a body that is not JSON', () => c.request('POST', '/api/auth/login', '{', { 'content-type': 'application/json' })],
    ['register with a body that fails the schema', () => c.post('/api/auth/register', { username: 'x', password: 'short' })],
  ]
  for (const [label, attempt] of checks) {
    const res = await attempt()
    await expectError(t, res, 429, 'RATE_LIMITED', label)
    const retry = Number(res.headers.get('retry-after'))
    t.ok(Number.isInteger(retry) && retry >= 1 && retry <= 60, `${label}: Retry-After ${retry} s`)
  }
  t.equal((await new Client(platform.url).post('/api/auth/login', { username: 'newcomer', password: 'right password' })).status, 401, 'the refused register created nothing')
  t.equal((await from('203.0.113.11').post('/api/auth/login', { username: 'Limited', password: 'right password' })).status, 200, 'another address signs in')
})

t.test('an IPv6 client counts by its /64: new addresses within it do not reset the limit, another /64 is not limited', async (t) => {
  // A subscriber is given a /64 and may use any address in it: counted per address, each guess could come from a new one.
  const inside = ['2001:db8:a:b::1', '2001:db8:a:b::2', '2001:DB8:A:B:0:0:0:3', '2001:0db8:000a:000b:ffff::9', '2001:db8:a:b:1:2:3:4']
  for (let i = 1; i <= 10; i++) {
    const address = inside[i % inside.length]!.replace(/:(\d)$/, `:${i}`)
    await expectError(t, await from(address).post('/api/auth/login', { username: 'Limited', password: 'wrong password' }), 401, 'INVALID_CREDENTIALS', `failure ${i} from ${address}`)
  }
  for (const address of inside) {
    const res = await from(address).post('/api/auth/login', { username: 'Limited', password: 'right password' })
    await expectError(t, res, 429, 'RATE_LIMITED', `${address}: the same /64`)
    t.ok(Number(res.headers.get('retry-after')) >= 1, `${address}: Retry-After`)
  }
  t.equal((await from('2001:db8:a:c::1').post('/api/auth/login', { username: 'Limited', password: 'right password' })).status, 200, 'the next /64 signs in')
  t.equal((await from('::ffff:203.0.113.60').post('/api/auth/login', { username: 'Limited', password: 'right password' })).status, 200, 'an IPv4 address is its own')
})

// A proxy may write an IPv4 client as IPv6 in a spelling other than Node's (::FFFF:, expanded, hex):
// each is that IPv4 address, not the /64 0:0:0:0::/64 every such client would share.
t.test('an IPv4 client written as IPv6 in any spelling counts as that IPv4 address, not as one /64 of them all', async (t) => {
  for (let i = 1; i <= 10; i++) {
    await expectError(t, await from('0:0:0:0:0:FFFF:198.51.100.7').post('/api/auth/login', { username: 'Limited', password: 'wrong password' }), 401, 'INVALID_CREDENTIALS', `failure ${i}`)
  }
  await expectError(t, await from('::ffff:c633:6407').post('/api/auth/login', { username: 'Limited', password: 'right password' }), 429, 'RATE_LIMITED', 'the same address in hex')
  t.equal((await from('0:0:0:0:0:FFFF:198.51.100.8').post('/api/auth/login', { username: 'Limited', password: 'right password' })).status, 200, 'another IPv4 address signs in')
  t.equal((await from('198.51.100.9').post('/api/auth/login', { username: 'Limited', password: 'right password' })).status, 200, 'and one written as IPv4')
})

// A review found a developer's shell on this host taking a new limit with each loopback address it
// connected from (curl --interface 127.0.0.20, 127.0.0.21, ...: 16 million of them). Its own platform,
// since the test fills the one count every loopback client, the tests' own included, shares.
t.test('every loopback address is one client: 127.0.0.0/8 and ::1, in any spelling, share one count', async (t) => {
  const own = await startPlatform()
  t.teardown(() => own.stop())
  const at = (address: string) => {
    const c = new Client(own.url)
    return c.post('/api/auth/login', { username: 'Limited', password: 'wrong password' }, { 'x-forwarded-for': address })
  }
  for (let i = 1; i <= 10; i++) await expectError(t, await at(`127.0.${i}.${i + 1}`), 401, 'INVALID_CREDENTIALS', `failure ${i} from 127.0.${i}.${i + 1}`)
  for (const address of ['127.0.0.1', '127.255.255.254', '::1', '0:0:0:0:0:0:0:1', '::ffff:127.0.0.9', '::ffff:7f00:20']) {
    await expectError(t, await at(address), 429, 'RATE_LIMITED', `${address}: the same count`)
  }
  t.equal((await at('128.0.0.1')).status, 401, 'an address outside 127.0.0.0/8 has a count of its own')
  t.equal((await at('::2')).status, 401, 'as has an IPv6 address other than ::1')
})

t.test('behind two trusted proxies the client is the nearest untrusted X-Forwarded-For hop, not the inner proxy', async (t) => {
  // A CDN in front of nginx on this host: nginx (the peer) appends the CDN's address, a trusted
  // one (loopback here, the default TRUST_PROXY), after the client's. Counting the proxy would put
  // every client behind it into one count, which any one of them could fill.
  const chained = from('203.0.113.90, 127.0.0.1')
  for (let i = 1; i <= 10; i++) {
    await expectError(t, await chained.post('/api/auth/login', { username: 'Limited', password: 'wrong password' }), 401, 'INVALID_CREDENTIALS', `failure ${i}`)
  }
  await expectError(t, await from('203.0.113.90').post('/api/auth/login', { username: 'Limited', password: 'right password' }), 429, 'RATE_LIMITED', 'the same client, one proxy nearer')
  t.equal((await from('203.0.113.91, 127.0.0.1').post('/api/auth/login', { username: 'Limited', password: 'right password' })).status, 200, 'another client behind the same proxies signs in')
})

t.test('only wrong credentials count: bad requests, taken names and successes do not', async (t) => {
  const c = from('203.0.113.20')
  for (let i = 0; i < 12; i++) {
    await expectError(t, await c.post('/api/auth/login', { username: 'Limited' }), 400, 'VALIDATION_FAILED', `bad request ${i + 1}`)
    await expectError(t, await c.post('/api/auth/register', { username: 'Limited', password: 'whatever123' }), 409, 'USERNAME_TAKEN', `taken ${i + 1}`)
  }
  for (let i = 0; i < 9; i++) await c.post('/api/auth/login', { username: 'Limited', password: 'wrong password' })
  t.equal((await c.post('/api/auth/login', { username: 'Limited', password: 'right password' })).status, 200, 'nine failures still let the right password in')
  await expectError(t, await c.post('/api/auth/login', { username: 'Limited', password: 'wrong password' }), 401, 'INVALID_CREDENTIALS', 'the 10th failure')
  await expectError(t, await c.post('/api/auth/guest'), 429, 'RATE_LIMITED', 'then the limit')
})

t.test('guesses sent in parallel: only 10 password checks run, the others are 429 once those failed', async (t) => {
  const c = from('203.0.113.40')
  const answers = await Promise.all(Array.from({ length: 30 }, () => c.post('/api/auth/login', { username: 'Limited', password: 'wrong password' })))
  const statuses = answers.map((r) => r.status).sort()
  t.same(statuses, [...Array(10).fill(401), ...Array(20).fill(429)])
  await expectError(t, await c.post('/api/auth/login', { username: 'Limited', password: 'right password' }), 429, 'RATE_LIMITED', 'even the right password waits')
})

t.test('in parallel, a check that succeeds gives its place back', async (t) => {
  const c = from('203.0.113.41')
  const answers = await Promise.all([
    ...Array.from({ length: 9 }, () => c.post('/api/auth/login', { username: 'Limited', password: 'wrong password' })),
    c.post('/api/auth/login', { username: 'Limited', password: 'right password' }),
  ])
  t.same(answers.map((r) => r.status), [...Array(9).fill(401), 200], 'ten checks at once all run')
  await expectError(t, await c.post('/api/auth/login', { username: 'Limited', password: 'wrong password' }), 401, 'INVALID_CREDENTIALS', 'the 10th failure')
  await expectError(t, await c.post('/api/auth/guest'), 429, 'RATE_LIMITED', 'then the limit')
})

t.test('right passwords sent in parallel all sign in, however many, and guests beside them too', async (t) => {
  const c = from('203.0.113.42')
  const answers = await Promise.all([
    ...Array.from({ length: 25 }, () => c.post('/api/auth/login', { username: 'Limited', password: 'right password' })),
    ...Array.from({ length: 3 }, () => c.post('/api/auth/guest')),
  ])
  t.same(answers.map((r) => r.status), Array(28).fill(200))
  for (let i = 0; i < 5; i++) await c.post('/api/auth/login', { username: 'Limited', password: 'wrong password' })
  const after = await Promise.all(Array.from({ length: 8 }, () => c.post('/api/auth/login', { username: 'Limited', password: 'right password' })))
  t.same(after.map((r) => r.status), Array(8).fill(200), 'with 5 failures, 8 right passwords at once: 5 checks run, 3 wait, none is refused')
  for (let i = 6; i <= 10; i++) {
    await expectError(t, await c.post('/api/auth/login', { username: 'Limited', password: 'wrong password' }), 401, 'INVALID_CREDENTIALS', `failure ${i}: the successes counted for nothing`)
  }
  await expectError(t, await c.post('/api/auth/guest'), 429, 'RATE_LIMITED', 'then the limit')
})

t.test('logins whose clients went away while waiting for a place hold none', async (t) => {
  const address = '203.0.113.43'
  const body = JSON.stringify({ username: 'Limited', password: 'right password' })
  const port = new URL(platform.url).port
  const abandoned = (): Promise<void> =>
    new Promise((resolve) => {
      const socket = net.connect(Number(port), '127.0.0.1', () => {
        socket.write(`POST /api/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-Forwarded-For: ${address}\r\nContent-Length: ${body.length}\r\n\r\n${body}`)
        setImmediate(() => socket.destroy())
      })
      socket.on('close', () => resolve()).on('error', () => resolve())
    })
  const c = from(address)
  const answers = await Promise.all([
    ...Array.from({ length: 10 }, () => c.post('/api/auth/login', { username: 'Limited', password: 'right password' })),
    ...Array.from({ length: 20 }, abandoned),
  ])
  t.same(answers.slice(0, 10).map((r) => (r as Response).status), Array(10).fill(200))
  await sleep(500)
  const later = await Promise.race([
    Promise.all(Array.from({ length: 10 }, () => c.post('/api/auth/login', { username: 'Limited', password: 'right password' }))),
    new Promise<null>((r) => setTimeout(() => r(null), 10_000)),
  ])
  t.ok(later, 'ten more sign in within 10 s: no place is held by a client that left')
  t.same(later?.map((r) => r.status), Array(10).fill(200))
})

t.test('the limit does not stop a signed-in user: only sign-ins are limited', async (t) => {
  const c = from('203.0.113.30')
  await c.post('/api/auth/guest')
  for (let i = 0; i < 10; i++) await c.post('/api/auth/login', { username: 'Limited', password: 'wrong password' })
  t.equal((await c.get('/api/auth/session')).status, 200)
  t.equal((await c.put('/api/user/username', { username: 'stillfine' })).status, 200)
})

t.test('the failures are kept in the game backend: a restart of the platform does not forget them', async (t) => {
  const dataDir = tempDir()
  const first = await startPlatform({ dataDir })
  const at = (p: typeof first): Client => {
    const c = new Client(p.url)
    const request = c.request.bind(c)
    c.request = (method, path, body, headers = {}) => request(method, path, body, { 'x-forwarded-for': '203.0.113.77', ...headers })
    return c
  }
  await signUp(t, new Client(first.url), 'Kept', 'right password')
  for (let i = 0; i < 10; i++) await at(first).post('/api/auth/login', { username: 'Kept', password: 'wrong password' })
  await expectError(t, await at(first).post('/api/auth/guest'), 429, 'RATE_LIMITED', 'limited before the restart')
  await first.stop()
  const second = await startPlatform({ dataDir })
  t.teardown(() => second.stop())
  const res = await at(second).post('/api/auth/login', { username: 'Kept', password: 'right password' })
  await expectError(t, res, 429, 'RATE_LIMITED', 'and after it')
  const retry = Number(res.headers.get('retry-after'))
  t.ok(retry >= 1 && retry <= 60, `Retry-After ${retry} s`)
  t.equal((await new Client(second.url).post('/api/auth/login', { username: 'Kept', password: 'right password' })).status, 200, 'another address is free')
})


t.test('failures the database will not record (a full disk) still limit the address: 500 for each, then 429', async (t) => {
  const dataDir = tempDir()
  const running = await startPlatform({ dataDir })
  t.teardown(() => running.stop())
  await signUp(t, new Client(running.url), 'Unwritten', 'right password')
  // The database reads but refuses every write to the failure windows, as a full disk would.
  const db = new Database(path.join(dataDir, 'playfield.sqlite'))
  t.teardown(() => db.close())
  db.exec(`CREATE TRIGGER full_insert BEFORE INSERT ON event_windows BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END;
           CREATE TRIGGER full_update BEFORE UPDATE ON event_windows BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END;`)
  const c = new Client(running.url)
  const request = c.request.bind(c)
  c.request = (method, path, body, headers = {}) => request(method, path, body, { 'x-forwarded-for': '203.0.113.80', ...headers })
  for (let i = 1; i <= 10; i++) {
    await expectError(t, await c.post('/api/auth/login', { username: 'Unwritten', password: 'wrong password' }), 500, 'INTERNAL', `failure ${i}: not recorded, and said so`)
  }
  await expectError(t, await c.post('/api/auth/login', { username: 'Unwritten', password: 'wrong password' }), 429, 'RATE_LIMITED', 'the 11th guess is not checked')
  await expectError(t, await c.post('/api/auth/login', { username: 'Unwritten', password: 'right password' }), 429, 'RATE_LIMITED', 'nor is the right password: no answer tells it from a wrong one')
  db.exec('DROP TRIGGER full_insert; DROP TRIGGER full_update')
  await expectError(t, await c.post('/api/auth/guest'), 429, 'RATE_LIMITED', 'writes working again: the failures still count for their minute')
  t.same(db.prepare("SELECT key FROM event_windows WHERE key LIKE 'signin:%'").all(), [], 'none of them is in the database')
  t.equal((await new Client(running.url).post('/api/auth/login', { username: 'Unwritten', password: 'right password' })).status, 200, 'another address signs in')
})
