import t from 'tap'
import { randomBytes } from 'node:crypto'
import path from 'node:path'
import { Client, ROOT, startPlatform } from './helpers/platform.js'
import { nakamaEnv, testNakama } from './fake-nakama/env.js'

// A Nakama call that fails after an earlier one of the same request took effect: the answer tells
// the client what happened (README "Scaling out with Nakama", Errors: nothing half-done).

const nakama = await testNakama()
const fake = nakama.fake
t.teardown(() => fake?.close())
const onFake = { skip: fake ? false : 'needs the fake Nakama' }

const env = { ...nakamaEnv(nakama), SESSION_SECRET: randomBytes(32).toString('hex'), MANIFESTS_DIR: path.join(ROOT, 'test/fixtures/leaderboards') }
const platform = await startPlatform({ env })
t.teardown(() => platform.stop())
const tag = randomBytes(3).toString('hex')
const name = (base: string) => `${base}_${tag}`
const json = async (res: Response) => (await res.json()) as any

t.test('a login whose roles cannot be read is 503 with no cookie; a retry signs in', onFake, async (t) => {
  const c = new Client(platform.url)
  t.equal((await c.post('/api/auth/register', { username: name('half'), password: 'correct horse' })).status, 200)
  fake!.intercept = (_method, p) => (p === '/v2/rpc/playfield_get_account' ? 'fail' : undefined)
  const login = await new Client(platform.url).post('/api/auth/login', { username: name('half'), password: 'correct horse' })
  fake!.intercept = null
  t.equal(login.status, 503)
  t.same(await login.json(), { error: 'the game backend is unavailable; try again shortly', code: 'BACKEND_UNAVAILABLE' })
  t.same(login.headers.getSetCookie(), [], 'no cookie: the client is not signed in by a 503')
  const retry = await new Client(platform.url).post('/api/auth/login', { username: name('half'), password: 'correct horse' })
  t.equal(retry.status, 200)
  t.match(await retry.json(), { success: true, user: { username: name('half'), roles: [] } })
})

t.test('guest and register need no roles read: a new account has none', onFake, async (t) => {
  fake!.intercept = (_method, p) => (p === '/v2/rpc/playfield_get_account' ? 'fail' : undefined)
  t.teardown(() => void (fake!.intercept = null))
  const c = new Client(platform.url)
  const res = await c.post('/api/auth/register', { username: name('fresh'), password: 'correct horse' })
  t.equal(res.status, 200)
  t.match(await res.json(), { success: true, user: { username: name('fresh'), roles: [] } })
  t.equal(res.headers.getSetCookie().length, 1, 'signed in')
  const guest = await new Client(platform.url).post('/api/auth/guest')
  t.equal(guest.status, 200)
  t.same((await json(guest)).user.roles, [])
})

t.test('a rename done before the token refresh failed answers 200 and spends one rename; the next request brings the cookie up to date', onFake, async (t) => {
  const c = new Client(platform.url)
  const id = (await json(await c.post('/api/auth/register', { username: name('rn'), password: 'correct horse' }))).user.id as string
  fake!.intercept = (_method, p) => (p === '/v2/account/session/refresh' ? 'fail' : undefined)
  const res = await c.put('/api/user/username', { username: name('rn2') })
  fake!.intercept = null
  t.equal(res.status, 200, 'the rename happened, so it is not answered as failed')
  t.same(await res.json(), { success: true, username: name('rn2') })
  t.equal(fake!.state.users.get(id)!.username, name('rn2'))
  const session = await c.get('/api/auth/session')
  t.equal(session.status, 200)
  t.equal((await json(session)).user.username, name('rn2'))
  const token = await json(await c.get('/api/auth/backend-token'))
  t.equal(token.username, name('rn2'), 'the backend token carries the new name')
  // Two renames are left of the three: the one above was spent once, as accepted.
  t.equal((await c.put('/api/user/username', { username: name('rn3') })).status, 200)
  t.equal((await c.put('/api/user/username', { username: name('rn4') })).status, 200)
  t.equal((await c.put('/api/user/username', { username: name('rn5') })).status, 429)
})
