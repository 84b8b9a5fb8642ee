import t from 'tap'
import { setTimeout as sleep } from 'node:timers/promises'
import { randomBytes } from 'node:crypto'
import type { ServerResponse } from 'node:http'
import path from 'node:path'
import { loadPlatformConfig } from '../lib/config.js'
import { HttpError } from '../lib/http/errors.js'
import { createNakamaBackend } from '../lib/backend/nakama/index.js'
import { Client, ROOT, startPlatform } from './helpers/platform.js'
import { nakamaEnv } from './fake-nakama/env.js'
import { startFakeNakama } from './fake-nakama/server.js'

// Answers Nakama, or a proxy in front of it, should never give: a status nothing maps, a body that
// is not JSON, JSON of the wrong shape, a body too large or too slow. Each is the backend failing:
// 503 BACKEND_UNAVAILABLE on every route, logged with the call and the status (README "Scaling out
// with Nakama", Errors), never 500, a "no", a "not found" or a sign-out.

const fake = await startFakeNakama()
t.teardown(() => fake.close())
const env = { ...nakamaEnv(fake), SESSION_SECRET: randomBytes(32).toString('hex'), MANIFESTS_DIR: path.join(ROOT, 'test/fixtures/leaderboards') }
const platform = await startPlatform({ env })
t.teardown(() => platform.stop())

const tag = randomBytes(3).toString('hex')
let serial = 0
const UNAVAILABLE = { error: 'the game backend is unavailable; try again shortly', code: 'BACKEND_UNAVAILABLE' }
const PASSWORD = 'correct horse'
const member = `fault_${tag}`
if ((await new Client(platform.url).post('/api/auth/register', { username: member, password: PASSWORD })).status !== 200) throw new Error('register failed')

/** Answer with this status, body and content type. */
const answer = (status: number, body: string, type = 'application/json') => (res: ServerResponse) => void res.writeHead(status, { 'content-type': type }).end(body)

/** A freshly signed-in guest: its session has not been checked yet, so nothing is cached. */
async function guest(): Promise<Client> {
  const c = new Client(platform.url)
  const res = await c.post('/api/auth/guest')
  if (res.status !== 200) throw new Error(`guest: ${res.status}`)
  return c
}

/** Each route a client may call, the Nakama call it makes that the fault answers, and the call. */
const ROUTES: Array<{ name: string; nakama: string; call: () => Promise<Response> }> = [
  { name: 'guest', nakama: '/v2/account/authenticate/custom', call: () => new Client(platform.url).post('/api/auth/guest') },
  { name: 'register', nakama: '/v2/account/authenticate/email', call: () => new Client(platform.url).post('/api/auth/register', { username: `f${tag}${serial++}`, password: PASSWORD }) },
  { name: 'login', nakama: '/v2/account/authenticate/email', call: () => new Client(platform.url).post('/api/auth/login', { username: member, password: PASSWORD }) },
  { name: 'session', nakama: '/v2/rpc/playfield_session_revoked', call: async () => (await guest()).get('/api/auth/session') },
  { name: 'board read', nakama: '/v2/rpc/playfield_list_records', call: () => new Client(platform.url).get('/api/leaderboards/fx-best-desc') },
  { name: 'submit', nakama: '/v2/rpc/playfield_write_record', call: async () => (await guest()).post('/api/leaderboards/submit', { leaderboardId: 'fx-best-desc', score: 5 }) },
  { name: 'launch', nakama: '/v2/rpc/playfield_record_launch', call: async () => (await guest()).post('/api/games/fixture-boards/launch') },
  { name: 'rename', nakama: '/v2/rpc/playfield_rename', call: async () => (await guest()).put('/api/user/username', { username: `n${tag}${serial++}` }) },
  { name: 'logout', nakama: '/v2/rpc/playfield_revoke_session', call: async () => (await guest()).post('/api/auth/logout') },
]

/** Where the platform's log stood when the latest fault began. */
let mark = 0

/** Run `call` with Nakama's `route` answered by `fault`; the platform's answer. */
async function faulted(route: string, fault: (res: ServerResponse) => void, call: () => Promise<Response>): Promise<Response> {
  mark = platform.logs.length
  fake.intercept = (_method, p) => (p === route ? fault : undefined)
  try {
    return await call()
  } finally {
    fake.intercept = null
  }
}

/** The log line the platform wrote for this call with this status since the latest fault began, waiting a moment for stdout. */
async function logged(route: string, status: number): Promise<Record<string, unknown> | undefined> {
  const find = () => platform.logs.slice(mark).find((l) => l.event === 'nakama.refused' && String(l.request).startsWith(`POST ${route}`) && l.status === status)
  for (let i = 0; i < 50 && !find(); i++) await sleep(20)
  return find()
}

t.test('an answer of a status nothing maps, or a 200 that is not JSON, is 503 BACKEND_UNAVAILABLE on every route, logged with the call and status', async (t) => {
  const faults: Array<[string, number, (res: ServerResponse) => void]> = [
    ['a proxy\'s 400 page', 400, answer(400, '<h1>400 Bad Request</h1>', 'text/html')],
    ['403 code 7', 403, answer(403, '{"code":7,"message":"Forbidden."}')],
    ['a proxy\'s 404 page', 404, answer(404, '<h1>Not Found</h1>', 'text/html')],
    ['409 code 6, not about a username', 409, answer(409, '{"code":6,"message":"Already exists."}')],
    ['a proxy\'s 413 page', 413, answer(413, '<html><body><h1>413 Request Entity Too Large</h1></body></html>', 'text/html')],
    ['a 200 page', 200, answer(200, '<!doctype html><title>Welcome</title>', 'text/html')],
    ['a 200 of truncated JSON', 200, answer(200, '{"token":"eyJhbGciOi')],
  ]
  for (const route of ROUTES) {
    for (const [label, status, fault] of faults) {
      // A banned account (403 code 7) is Nakama refusing the sign-in itself: INVALID_CREDENTIALS, as before.
      if (route.name === 'login' && label === '403 code 7') continue
      const res = await faulted(route.nakama, fault, route.call)
      t.equal(res.status, 503, `${route.name}, ${label}: 503`)
      t.same(await res.json(), UNAVAILABLE, `${route.name}, ${label}: the contract's body`)
      t.ok(await logged(route.nakama, status), `${route.name}, ${label}: logged with the call and ${status}`)
    }
  }
  const banned = await faulted('/v2/account/authenticate/email', answer(403, '{"code":7,"message":"User account banned."}'), ROUTES[2]!.call)
  t.equal(banned.status, 401, 'login refused by Nakama itself (banned) is still INVALID_CREDENTIALS')
  t.equal((await ROUTES[2]!.call()).status, 200, 'and none of the 503s counted as a failed sign-in')
})

t.test('module answers of the wrong shape are 503, never "active", "signed out", "not found" or done', async (t) => {
  const cases: Array<[string, string, string, (c: Client) => Promise<Response>]> = [
    ['a revocation check answered {} (not "active")', 'playfield_session_revoked', '{}', (c) => c.get('/api/auth/session')],
    ['an account answered {} (not signed out)', 'playfield_get_account', '{}', (c) => c.get('/api/auth/session')],
    ['an account answered [] (not signed out)', 'playfield_get_account', '[]', (c) => c.get('/api/auth/session')],
    ['a write answered {} (not LEADERBOARD_NOT_FOUND)', 'playfield_write_record', '{}', (c) => c.post('/api/leaderboards/submit', { leaderboardId: 'fx-best-desc', score: 5 })],
    ['a launch answered null (not recorded)', 'playfield_record_launch', 'null', (c) => c.post('/api/games/fixture-boards/launch')],
    ['a launch answered {} (not recorded)', 'playfield_record_launch', '{}', (c) => c.post('/api/games/fixture-boards/launch')],
    ['a revocation answered {} (not stored)', 'playfield_revoke_session', '{}', (c) => c.post('/api/auth/logout')],
    ['a rename answered {} (not signed out)', 'playfield_rename', '{}', (c) => c.put('/api/user/username', { username: `s${tag}${serial++}` })],
    ['a page answered {}', 'playfield_list_records', '{}', (c) => c.get('/api/leaderboards/fx-best-desc')],
    ['a page whose records are not records', 'playfield_list_records', '{"records":[{"score":"1"}],"nextCursor":null,"ownRecord":null}', (c) => c.get('/api/leaderboards/fx-best-desc')],
  ]
  for (const [label, rpc, body, call] of cases) {
    const c = await guest()
    const res = await faulted(`/v2/rpc/${rpc}`, answer(200, body), () => call(c))
    t.equal(res.status, 503, `${label}: 503`)
    t.same(await res.json(), UNAVAILABLE, label)
    t.same(res.headers.getSetCookie(), [], `${label}: the cookie is left alone`)
    t.match(await logged(`/v2/rpc/${rpc}`, 200), { problem: 'not of the expected shape' }, `${label}: logged`)
    t.equal((await c.get('/api/auth/session')).status, 200, `${label}: still signed in`)
  }
  const events = await faulted('/v2/rpc/playfield_event_window', answer(200, '{}'), () => new Client(platform.url).post('/api/auth/login', { username: member, password: PASSWORD }))
  t.equal(events.status, 503, 'a sign-in window answered {}: 503')
})

t.test('an answer past 1 MiB is dropped unread (503, the connection closed early); one just under it is read', async (t) => {
  const TOTAL = 64 * 1024 * 1024
  const chunk = Buffer.alloc(64 * 1024, 'x')
  let sentAtClose = -1
  const flood = (res: ServerResponse) => {
    let sent = 0
    res.writeHead(200, { 'content-type': 'application/json' })
    res.write('{"revoked":false,"pad":"')
    res.on('close', () => (sentAtClose = sent))
    const pump = (): void => {
      while (sent < TOTAL) {
        sent += chunk.length
        if (!res.write(chunk)) return void res.once('drain', pump)
      }
      res.end('"}')
    }
    pump()
  }
  const c = await guest()
  const res = await faulted('/v2/rpc/playfield_session_revoked', flood, () => c.get('/api/auth/session'))
  t.equal(res.status, 503)
  t.same(await res.json(), UNAVAILABLE)
  for (let i = 0; i < 100 && sentAtClose < 0; i++) await sleep(20)
  t.ok(sentAtClose >= 0 && sentAtClose < TOTAL / 4, `the platform stopped reading (${sentAtClose} of ${TOTAL} bytes written)`)
  t.match(await logged('/v2/rpc/playfield_session_revoked', 200), { problem: 'over 1048576 bytes' }, 'logged')

  const declared = answer(200, JSON.stringify({ revoked: false, pad: 'x'.repeat(1_100_000) }))
  const c2 = await guest()
  t.equal((await faulted('/v2/rpc/playfield_session_revoked', declared, () => c2.get('/api/auth/session'))).status, 503, 'a Content-Length past the cap too')

  // Some 900 KiB: twice a page of 100 records carrying 2 KiB of metadata each, which the module never sends.
  const large = answer(200, JSON.stringify({ revoked: false, pad: 'x'.repeat(900 * 1024) }))
  const c3 = await guest()
  t.equal((await faulted('/v2/rpc/playfield_session_revoked', large, () => c3.get('/api/auth/session'))).status, 200, 'a large answer under the cap is read')
})

t.test('the time-out covers the whole exchange: the retry, and a body that never ends', async (t) => {
  const b = createNakamaBackend(loadPlatformConfig({ ...nakamaEnv(fake), DATA_DIR: '/tmp' }).nakama!, { timeoutMs: 400 })
  const held = new Set<ServerResponse>()
  t.teardown(() => {
    for (const res of held) res.destroy()
  })
  /** Headers and the start of a body, then nothing more. */
  const stall = (res: ServerResponse) => {
    held.add(res)
    res.writeHead(200, { 'content-type': 'application/json' }).write('{"account":')
  }
  const session = await b.register(`t${tag}`, PASSWORD)
  const rejects = async (p: Promise<unknown>): Promise<number> => {
    const started = Date.now()
    const err = await p.then(() => null, (e: unknown) => e)
    t.ok(err instanceof HttpError && err.status === 503 && err.code === 'BACKEND_UNAVAILABLE', '503 BACKEND_UNAVAILABLE')
    return Date.now() - started
  }

  // A read: the first try fails late (500 after 200 ms), the retry stalls in its body.
  let tries = 0
  fake.intercept = (_method, p) => (p === '/v2/rpc/playfield_get_account' ? (tries++ === 0 ? (res: ServerResponse) => void setTimeout(() => answer(500, '{"code":13,"message":"Internal error."}')(res), 200) : stall) : undefined)
  const retried = await rejects(b.getAccount(session.userId))
  fake.intercept = null
  t.equal(tries, 2, 'tried twice')
  t.ok(retried < 650, `answered within the one time-out, not one per try (${retried} ms)`)

  fake.intercept = (_method, p) => (p === '/v2/rpc/playfield_record_launch' ? stall : undefined)
  const stalled = await rejects(b.recordLaunch({ sessionId: `s-${tag}`, gameId: 'g', userId: session.userId, time: Date.now() }))
  fake.intercept = null
  t.ok(stalled < 650, `a body that never ends is cut off by the time-out (${stalled} ms)`)
})

t.test('a 429 at start-up is Nakama overloaded, not a wrong NAKAMA_URL: the platform starts, as for one out of reach', async (t) => {
  fake.intercept = (_method, p) => (p === '/v2/account/authenticate/custom' ? answer(429, '{"code":8,"message":"Too many requests."}') : undefined)
  t.teardown(() => void (fake.intercept = null))
  const second = await startPlatform({ env })
  t.teardown(() => second.stop())
  t.match(second.logs.find((l) => l.event === 'platform.listening'), { backend: 'nakama' }, 'listening, not exit 2')
  fake.intercept = null
  t.equal((await new Client(second.url).post('/api/auth/guest')).status, 200, 'and serves once Nakama answers')
})

t.test('an ordinary logout logs no refusal: Nakama refusing its own logout of a token the module already logged out is expected', async (t) => {
  const c = await guest()
  t.equal((await c.get('/api/auth/backend-token')).status, 200)
  const from = platform.logs.length
  t.equal((await c.post('/api/auth/logout')).status, 200)
  await sleep(200)
  t.same(platform.logs.slice(from).filter((l) => l.event === 'nakama.refused'), [], 'no nakama.refused line')
})
