import t from 'tap'
import { Client, startPlatform, tempDir } from './helpers/platform.js'
import { BAD_NAMES, countRows, decodeJwt, expectError, signUp, type SessionBody } from './helpers/accounts.js'
import { authRoutes } from '../lib/platform/auth-routes.js'
import { userRoutes } from '../lib/platform/user-routes.js'
import { startClockedPlatform } from './helpers/clocked-platform.js'

const dataDir = tempDir()
let platform = await startPlatform({ dataDir })
t.teardown(() => platform.stop())

const rename = (c: Client, username: unknown): Promise<Response> => c.put('/api/user/username', { username })
const nameOf = async (c: Client): Promise<string> => ((await (await c.get('/api/auth/session')).json()) as SessionBody).user.username
const spent = (userId: string): number =>
  countRows(dataDir, "SELECT count(*) FROM buckets WHERE key = 'rename:' || ?", userId)

t.test('PUT /api/user/username without a session is 401 NO_SESSION', async (t) => {
  await expectError(t, await rename(new Client(platform.url), 'nobody1'), 401, 'NO_SESSION')
  // The session is checked before the body is read: a request without one learns nothing more.
  await expectError(t, await rename(new Client(platform.url), 'x'), 401, 'NO_SESSION', 'a name outside the rule')
  await expectError(t, await new Client(platform.url).put('/api/user/username', '{"username":'), 401, 'NO_SESSION', 'a body that is not JSON')
})

t.test('a rename answers the new name, shows in the session, and the next backend token carries it', async (t) => {
  const c = new Client(platform.url)
  const user = await signUp(t, c, 'before1')
  const tokenBefore = (await (await c.get('/api/auth/backend-token')).json()) as { token: string }
  const res = await rename(c, 'After_1')
  t.equal(res.status, 200)
  t.same(await res.json(), { success: true, username: 'After_1' })
  t.equal(res.headers.getSetCookie().length, 1, 'the cookie is reset with the new name')
  t.same(await (await c.get('/api/auth/session')).json(), { success: true, user: { id: user.id, username: 'After_1', roles: [] } })
  const token = (await (await c.get('/api/auth/backend-token')).json()) as { token: string; username: string }
  t.equal(token.username, 'After_1')
  t.equal(decodeJwt(token.token).claims.usn, 'After_1')
  t.equal(decodeJwt(token.token).claims.tid, decodeJwt(tokenBefore.token).claims.tid, 'refreshed, not a new session')
  t.equal((await new Client(platform.url).post('/api/auth/login', { username: 'after_1', password: 'correct horse' })).status, 200, 'login works with the new name')
  await expectError(t, await new Client(platform.url).post('/api/auth/login', { username: 'before1', password: 'correct horse' }), 401, 'INVALID_CREDENTIALS', 'the old name is gone')
})

t.test('names outside the rule are 400 VALIDATION_FAILED, change nothing and spend nothing', async (t) => {
  const c = new Client(platform.url)
  const user = await signUp(t, c, 'keeper1')
  for (const [label, username] of BAD_NAMES) await expectError(t, await rename(c, username), 400, 'VALIDATION_FAILED', label)
  const bodies: [string, unknown][] = [
    ['extra field', { username: 'valid1', other: 1 }],
    ['__proto__ key', '{"username":"valid1","__proto__":{"x":1}}'],
    ['missing username', {}],
    ['an array', [{ username: 'valid1' }]],
    ['a string', '"valid1"'],
  ]
  for (const [label, body] of bodies) await expectError(t, await c.put('/api/user/username', body), 400, 'VALIDATION_FAILED', label)
  // The details word the rule for a person, not as the regular expression.
  t.strictSame(await (await rename(c, 'bad name')).json(), {
    error: 'request does not match the schema',
    code: 'VALIDATION_FAILED',
    details: [{ path: '/username', message: 'must be 3-24 of A-Z a-z 0-9 _ -, starting with a letter or digit' }],
  })
  await expectError(t, await c.put('/api/user/username', '{"username":'), 400, 'INVALID_JSON')
  await expectError(t, await c.put('/api/user/username', 'valid1', { 'content-type': 'text/plain' }), 415, 'UNSUPPORTED_MEDIA_TYPE')
  t.equal(await nameOf(c), 'keeper1', 'the name is unchanged')
  t.equal(spent(user.id), 0, 'no bucket was touched')
  for (const name of ['valid1', 'valid2', 'valid3']) t.equal((await rename(c, name)).status, 200, 'all three renames are still there')
})

t.test('the boundary names of the rule are accepted', async (t) => {
  const c = new Client(platform.url)
  await signUp(t, c, 'edges1')
  for (const name of ['a1-', '9_z', 'Z'.repeat(24)]) {
    const res = await rename(c, name)
    t.same(await res.json(), { success: true, username: name }, name)
  }
})

t.test('a name taken by another user, ignoring case, is 409 USERNAME_TAKEN and spends nothing', async (t) => {
  await signUp(t, new Client(platform.url), 'Occupied')
  const c = new Client(platform.url)
  const user = await signUp(t, c, 'wants1')
  for (const name of ['Occupied', 'occupied', 'OCCUPIED']) await expectError(t, await rename(c, name), 409, 'USERNAME_TAKEN', name)
  t.equal(await nameOf(c), 'wants1')
  t.equal(spent(user.id), 0)
})

t.test('a rename reaches the other sessions: their backend token and their scores carry the new name', async (t) => {
  const first = new Client(platform.url)
  const user = await signUp(t, first, 'Shared_Old')
  const second = new Client(platform.url)
  t.equal((await second.post('/api/auth/login', { username: 'Shared_Old', password: 'correct horse' })).status, 200)
  await second.get('/api/auth/backend-token')
  t.equal((await rename(first, 'shared_new')).status, 200)
  // The old name is free again, and someone else takes it.
  const taker = await signUp(t, new Client(platform.url), 'Shared_Old')
  const token = (await (await second.get('/api/auth/backend-token')).json()) as { token: string; username: string; user_id: string }
  t.equal(token.username, 'shared_new', 'the other session\'s token answer names the account as it is now')
  t.equal(decodeJwt(token.token).claims.usn, 'shared_new', 'and so does the token itself')
  t.equal(token.user_id, user.id)
  const submit = await second.post('/api/leaderboards/submit', { leaderboardId: 'rune-best', score: 99 })
  t.equal(submit.status, 200)
  t.match(await submit.json(), { success: true, record: { owner_id: user.id, username: 'shared_new', score: 99 } })
  const board = (await (await new Client(platform.url).get('/api/leaderboards/rune-best?limit=100')).json()) as { records: { owner_id: string; username: string }[] }
  t.same(board.records.filter((r) => r.owner_id === user.id).map((r) => r.username), ['shared_new'], 'listed under the new name')
  t.notOk(board.records.some((r) => r.owner_id !== taker.id && r.username === 'Shared_Old'), 'no record shows the old name, now someone else\'s')
})

t.test('records written before a rename are served under the new name, in the database too; the old name\'s new holder has only their own', async (t) => {
  const owner = new Client(platform.url)
  const user = await signUp(t, owner, 'Before_Old')
  const first = await owner.post('/api/leaderboards/submit', { leaderboardId: 'rune-best', score: 900 })
  t.match(await first.json(), { record: { username: 'Before_Old' } })
  t.equal((await rename(owner, 'before_new')).status, 200)
  const taker = new Client(platform.url)
  const other = await signUp(t, taker, 'Before_Old')
  t.equal((await taker.post('/api/leaderboards/submit', { leaderboardId: 'rune-best', score: 1 })).status, 200)
  const board = (await (await owner.get('/api/leaderboards/rune-best?limit=100')).json()) as {
    records: { owner_id: string; username: string }[]
    ownRecord: { username: string } | null
  }
  t.same(board.records.filter((r) => r.owner_id === user.id).map((r) => r.username), ['before_new'], 'the earlier record under the new name')
  t.same(board.records.filter((r) => r.username === 'Before_Old').map((r) => r.owner_id), [other.id], 'the old name only on its new holder\'s record')
  t.equal(board.ownRecord?.username, 'before_new')
  const unchanged = await owner.post('/api/leaderboards/submit', { leaderboardId: 'rune-best', score: 5 })
  t.match(await unchanged.json(), { record: { username: 'before_new', score: 900 } }, 'a write that changes nothing answers the new name')
  // Nakama keeps the name a record was written with and the module serves the current one.
  if (process.env.TEST_BACKEND !== 'nakama') {
    const stale = countRows(dataDir, "SELECT count(*) FROM leaderboard_records WHERE owner_id = ? AND username = 'Before_Old'", user.id)
    t.equal(stale, 0, 'stored under the new name, so a restart serves it too')
  }
})

t.test('a session that read its new name first still gets a token carrying it, never the old one', async (t) => {
  const first = new Client(platform.url)
  const user = await signUp(t, first, 'Read_Old')
  const second = new Client(platform.url)
  t.equal((await second.post('/api/auth/login', { username: 'Read_Old', password: 'correct horse' })).status, 200)
  t.equal((await rename(first, 'read_new')).status, 200)
  const session = (await (await second.get('/api/auth/session')).json()) as { user: { username: string } }
  t.equal(session.user.username, 'read_new')
  const taker = await signUp(t, new Client(platform.url), 'Read_Old')
  const token = (await (await second.get('/api/auth/backend-token')).json()) as { token: string; username: string; user_id: string }
  t.equal(token.username, 'read_new')
  t.equal(decodeJwt(token.token).claims.usn, 'read_new', 'the token names the account as it is now')
  t.equal(decodeJwt(token.token).claims.uid, user.id)
  t.not(taker.id, user.id)
})

t.test('renaming to the current name changes and spends nothing; a change of case is a change', async (t) => {
  const c = new Client(platform.url)
  const user = await signUp(t, c, 'sameName')
  const same = await rename(c, 'sameName')
  t.same(await same.json(), { success: true, username: 'sameName' })
  t.equal(spent(user.id), 0, 'the same name spends nothing')
  const recased = await rename(c, 'SameName')
  t.same(await recased.json(), { success: true, username: 'SameName' })
  t.equal(await nameOf(c), 'SameName')
  t.equal(spent(user.id), 1, 'a change of case spent a token')
})

t.test('the 4th accepted rename within the hour is 429 RATE_LIMITED with Retry-After, and nothing changes', async (t) => {
  const c = new Client(platform.url)
  await signUp(t, c, 'often0')
  for (const name of ['often1', 'often2', 'often3']) t.equal((await rename(c, name)).status, 200, name)
  const res = await rename(c, 'often4')
  const body = await expectError(t, res, 429, 'RATE_LIMITED')
  const retry = Number(res.headers.get('retry-after'))
  t.ok(Number.isInteger(retry) && retry > 1100 && retry <= 1200, `Retry-After ${retry} s is about 20 minutes (one token of 3 per hour)`)
  t.equal(body.error, 'too many username changes; try again later', 'the same wording on either backend')
  t.equal(await nameOf(c), 'often3')
  t.equal((await new Client(platform.url).post('/api/auth/register', { username: 'often4', password: 'correct horse' })).status, 200, 'the refused name stays free')
})

t.test('Retry-After is the wait that suffices: a rename after it is accepted, one a second earlier is not (in-process, injected clock)', async (t) => {
  const { client: c, clock } = await startClockedPlatform(t, [authRoutes, userRoutes])
  t.equal((await c.post('/api/auth/guest')).status, 200)
  for (const name of ['waiter1', 'waiter2', 'waiter3']) t.equal((await rename(c, name)).status, 200, name)
  // Half a second later the bucket holds a sliver of a token: the wait is 1199.5 s, so 1200 whole seconds.
  clock.now += 500
  const refused = await rename(c, 'waiter4')
  await expectError(t, refused, 429, 'RATE_LIMITED')
  const retry = Number(refused.headers.get('retry-after'))
  t.equal(retry, 1200, 'Retry-After rounds the wait up to whole seconds')
  clock.now += (retry - 1) * 1000
  const early = await rename(c, 'waiter4')
  await expectError(t, early, 429, 'RATE_LIMITED', 'a second before Retry-After has passed')
  t.equal(early.headers.get('retry-after'), '1', 'the half second left, rounded up')
  clock.now += 1000
  const res = await rename(c, 'waiter4')
  t.equal(res.status, 200, 'once Retry-After has passed')
  t.same(await res.json(), { success: true, username: 'waiter4' })
})

t.test('10 concurrent renames by one user: exactly 3 are accepted', async (t) => {
  const c = new Client(platform.url)
  await signUp(t, c, 'racer0')
  const results = await Promise.all(Array.from({ length: 10 }, (_, i) => rename(c, `racer${i + 1}`)))
  const statuses = results.map((r) => r.status).sort()
  t.same(statuses, [200, 200, 200, 429, 429, 429, 429, 429, 429, 429])
  const accepted = await Promise.all(results.filter((r) => r.status === 200).map(async (r) => ((await r.json()) as { username: string }).username))
  t.ok(accepted.includes(await nameOf(c)), 'the final name is one of the accepted ones')
})

t.test('two platform processes on one file cannot overspend a bucket between them', async (t) => {
  const second = await startPlatform({ dataDir })
  t.teardown(() => second.stop())
  const a = new Client(platform.url)
  await signUp(t, a, 'twoproc0')
  const b = new Client(second.url)
  b.cookies = a.cookies
  const results = await Promise.all(
    Array.from({ length: 10 }, (_, i) => rename(i % 2 ? b : a, `twoproc${i + 1}`)),
  )
  t.same(results.map((r) => r.status).filter((s) => s === 200).length, 3)
})

t.test('three renames, a restart, and the fourth is still 429: the rename bucket is stored, not kept in memory', async (t) => {
  const c = new Client(platform.url)
  await signUp(t, c, 'restart0')
  for (const name of ['restart1', 'restart2', 'restart3']) t.equal((await rename(c, name)).status, 200)
  await platform.stop()
  platform = await startPlatform({ dataDir })
  const again = new Client(platform.url)
  again.cookies = c.cookies
  await expectError(t, await rename(again, 'restart4'), 429, 'RATE_LIMITED')
  t.equal(await nameOf(again), 'restart3')
})
