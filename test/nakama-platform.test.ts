import t, { type Test } from 'tap'
import { setTimeout as sleep } from 'node:timers/promises'
import { createHash, randomBytes } from 'node:crypto'
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import path from 'node:path'
import { bridgeCredential, isAccessProof } from '../lib/ticket.js'
import { Client, ROOT, runUsers, startPlatform, tempDir, type RunningProcess } from './helpers/platform.js'
import { contendStorage, nakamaEnv, testNakama } from './fake-nakama/env.js'
import { startFakeNakama } from './fake-nakama/server.js'
import { SYSTEM_USER } from './fake-nakama/state.js'

// The platform on the Nakama backend, black-box over HTTP: two instances on one Nakama (the fake,
// or the real one named by NAKAMA_URL, NAKAMA_SERVER_KEY and NAKAMA_HTTP_KEY), sharing SESSION_SECRET.

const nakama = await testNakama()
const fake = nakama.fake
t.teardown(() => fake?.close())
const onFake = { skip: fake ? false : 'needs the fake Nakama' }

const FIXTURES = path.join(ROOT, 'test/fixtures/leaderboards')
const SESSION_SECRET = randomBytes(32).toString('hex')
const env = { ...nakamaEnv(nakama), SESSION_SECRET, MANIFESTS_DIR: FIXTURES }
const a = await startPlatform({ env })
const b = await startPlatform({ env })
t.teardown(() => Promise.all([a.stop(), b.stop()]))

const tag = randomBytes(3).toString('hex')
const name = (base: string) => `${base}_${tag}`
const claims = (token: string) => JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString())
const on = (p: RunningProcess, from: Client) => Object.assign(new Client(p.url), { cookies: from.cookies })
const json = async (res: Response) => (await res.json()) as any

async function register(p: RunningProcess, username: string): Promise<{ client: Client; id: string }> {
  const client = new Client(p.url)
  const res = await client.post('/api/auth/register', { username, password: 'correct horse' })
  if (res.status !== 200) throw new Error(`register ${username}: ${res.status} ${await res.text()}`)
  return { client, id: (await json(res)).user.id }
}

t.test('a session signed in on one instance works on the other, with Nakama tokens', async (t) => {
  const { client, id } = await register(a, name('roam'))
  const res = await on(b, client).get('/api/auth/session')
  t.equal(res.status, 200)
  t.same(await res.json(), { success: true, user: { id, username: name('roam'), roles: [] } })
  const token = await json(await on(b, client).get('/api/auth/backend-token'))
  t.same(Object.keys(token).sort(), ['expires_at', 'refresh_token', 'success', 'token', 'user_id', 'username'])
  t.match(token, { success: true, user_id: id, username: name('roam') })
  t.ok(token.expires_at >= Date.now() + 5 * 60_000, 'valid for at least 5 more minutes (CONTRACT §3)')
  t.equal(token.expires_at, claims(token.token).exp * 1000)
  const account = await fetch(`${nakama.url}/v2/account`, { headers: { authorization: `Bearer ${token.token}` } })
  t.equal(account.status, 200, "the token is Nakama's own: Nakama accepts it")
  t.match(await account.json(), { user: { id, username: name('roam') } })
})

t.test('the sessions of an account deleted in Nakama are over: 401 NO_SESSION for every route that needs one', onFake, async (t) => {
  const { client, id } = await register(a, name('gone'))
  t.equal((await client.post('/api/leaderboards/submit', { leaderboardId: 'fx-best-desc', score: 5 })).status, 200)
  fake!.state.users.delete(id)
  // An answer "still active" is trusted for a second.
  await sleep(1_100)
  // Each with the cookie as it was (a 401 clears the cookie of the client that got it).
  for (const [label, res] of [
    ['submit', await on(a, client).post('/api/leaderboards/submit', { leaderboardId: 'fx-best-desc', score: 9 })],
    ['launch', await on(a, client).post('/api/games/fixture-native/launch')],
    ['backend token', await on(a, client).get('/api/auth/backend-token')],
    ['session', await on(a, client).get('/api/auth/session')],
  ] as const) {
    t.equal(res.status, 401, `${label}: 401`)
    t.same(await res.json(), { error: 'no session', code: 'NO_SESSION' }, `${label}: body`)
  }
  const board = await json(await new Client(a.url).get('/api/leaderboards/fx-best-desc?limit=100'))
  t.same(board.records.filter((r: { owner_id: string }) => r.owner_id === id).map((r: { score: number }) => r.score), [5], 'no score written after the deletion')
})

t.test('the sessions of an account banned in Nakama are over on every instance, and stay over once the ban is lifted', onFake, async (t) => {
  const { client, id } = await register(a, name('ban'))
  const copy = on(b, client)
  t.equal((await client.post('/api/leaderboards/submit', { leaderboardId: 'fx-best-desc', score: 5 })).status, 200)
  t.equal((await copy.get('/api/auth/session')).status, 200)
  fake!.state.ban(id)
  await sleep(1_100) // "still active" is trusted for a second
  for (const [label, res] of [
    ['submit', await on(a, client).post('/api/leaderboards/submit', { leaderboardId: 'fx-best-desc', score: 9 })],
    ['launch', await on(a, client).post('/api/games/fixture-native/launch')],
    ['session', await on(a, client).get('/api/auth/session')],
  ] as const) {
    t.equal(res.status, 401, `${label}: 401`)
    t.same(await res.json(), { error: 'no session', code: 'NO_SESSION' }, `${label}: body`)
  }
  const login = await new Client(a.url).post('/api/auth/login', { username: name('ban'), password: 'correct horse' })
  t.equal(login.status, 401, 'a login while banned')
  t.same(await login.json(), { error: 'wrong username or password', code: 'INVALID_CREDENTIALS' })
  fake!.state.unban(id)
  await sleep(1_100)
  const res = await on(b, client).get('/api/auth/session')
  t.equal(res.status, 401, 'the session the ban ended stays ended after it is lifted, on the other instance too')
  t.same(await res.json(), { error: 'no session', code: 'NO_SESSION' })
  t.equal((await new Client(b.url).post('/api/auth/login', { username: name('ban'), password: 'correct horse' })).status, 200, 'a new sign-in works once the ban is lifted')
  const board = await json(await new Client(a.url).get('/api/leaderboards/fx-best-desc?limit=100'))
  t.same(board.records.filter((r: { owner_id: string }) => r.owner_id === id).map((r: { score: number }) => r.score), [5], 'no score written during the ban')
})

t.test('the rename limit holds across instances; the next token carries the new name', async (t) => {
  const { client, id } = await register(a, name('lim'))
  const accepted: number[] = []
  const results = await Promise.all([0, 1, 2, 3, 4, 5].map((i) => on(i % 2 ? a : b, client).put('/api/user/username', { username: name(`l${i}`) })))
  for (const [i, res] of results.entries()) if (res.status === 200) accepted.push(i)
  t.equal(accepted.length, 3, 'exactly 3 of 6 concurrent renames over two instances')
  for (const res of results.filter((r) => r.status !== 200)) {
    t.equal(res.status, 429)
    t.ok(Number(res.headers.get('retry-after')) > 0, 'Retry-After')
    t.same(await res.json(), { error: 'too many username changes; try again later', code: 'RATE_LIMITED' })
  }
  const limited = await on(b, client).put('/api/user/username', { username: name('late') })
  t.equal(limited.status, 429, 'the 4th is refused on the other instance too')
  const session = await json(await on(b, client).get('/api/auth/session'))
  t.ok(accepted.some((i) => session.user.username === name(`l${i}`)), 'the name is one that was accepted')
  t.equal(session.user.id, id)

  const fresh = await register(b, name('next'))
  t.equal((await fresh.client.put('/api/user/username', { username: name('next2') })).status, 200)
  const token = await json(await fresh.client.get('/api/auth/backend-token'))
  t.equal(claims(token.token).usn, name('next2'), 'the rename refreshed the Nakama session')
  const taken = await on(a, fresh.client).put('/api/user/username', { username: name('roam') })
  t.equal(taken.status, 409)
  t.same(await taken.json(), { error: `the username "${name('roam')}" is taken`, code: 'USERNAME_TAKEN' })
})

t.test('logout on one instance ends the session on the other', async (t) => {
  const { client } = await register(a, name('bye'))
  const copy = on(b, client)
  t.equal((await copy.get('/api/auth/session')).status, 200)
  t.equal((await client.post('/api/auth/logout')).status, 200)
  await sleep(1_100) // the other instance trusts "active" for 1 s
  const res = await copy.get('/api/auth/session')
  t.equal(res.status, 401)
  t.same(await res.json(), { error: 'no session', code: 'NO_SESSION' })
})

t.test("switching a DATA_DIR's platform to Nakama and back: nothing moves, each backend's cookies are NO_SESSION on the other, the embedded database is kept", async (t) => {
  const dataDir = tempDir()
  const files = () => Object.fromEntries(readdirSync(dataDir, { recursive: true, encoding: 'utf8' }).sort().map((f) => {
    const file = path.join(dataDir, f)
    return [f, statSync(file).isFile() ? createHash('sha256').update(readFileSync(file)).digest('hex') : 'dir']
  }))
  const embeddedEnv = { SESSION_SECRET, MANIFESTS_DIR: FIXTURES, GAME_BACKEND: undefined }
  const embedded = await startPlatform({ dataDir, env: embeddedEnv })
  const before = new Client(embedded.url)
  t.equal((await before.post('/api/auth/register', { username: name('move'), password: 'correct horse' })).status, 200)
  t.equal((await before.post('/api/leaderboards/submit', { leaderboardId: 'fx-best-desc', score: 7 })).status, 200)
  await embedded.stop()
  const kept = files()
  t.ok(kept['playfield.sqlite'], 'the embedded database is in DATA_DIR')

  const onNakama = await startPlatform({ dataDir, env })
  t.teardown(() => onNakama.stop())
  const stale = await on(onNakama, before).get('/api/auth/session')
  t.equal(stale.status, 401, "an embedded session's cookie opens (same SESSION_SECRET) but names no Nakama session")
  t.same(await stale.json(), { error: 'no session', code: 'NO_SESSION' })
  const login = await new Client(onNakama.url).post('/api/auth/login', { username: name('move'), password: 'correct horse' })
  t.equal(login.status, 401, 'the embedded account is not in Nakama')
  t.same(await login.json(), { error: 'wrong username or password', code: 'INVALID_CREDENTIALS' })
  const board = await json(await new Client(onNakama.url).get('/api/leaderboards/fx-best-desc?limit=100'))
  t.notOk(board.records.some((r: { username: string }) => r.username === name('move')), 'nor its score')
  const after = new Client(onNakama.url)
  t.equal((await after.post('/api/auth/register', { username: name('move'), password: 'other horse' })).status, 200, 'the name is free in Nakama')
  await onNakama.stop()
  t.same(files(), kept, 'the platform on Nakama left every file of DATA_DIR as it was (the secrets it shares with the embedded one included)')

  const back = await startPlatform({ dataDir, env: embeddedEnv })
  t.teardown(() => back.stop())
  const resumed = await on(back, before).get('/api/auth/session')
  t.equal(resumed.status, 200, "switched back, the embedded session's cookie works again")
  t.match(await resumed.json(), { success: true, user: { username: name('move') } })
  const foreign = await on(back, after).get('/api/auth/session')
  t.equal(foreign.status, 401, "a Nakama session's cookie names no embedded session")
  t.same(await foreign.json(), { error: 'no session', code: 'NO_SESSION' })
  const scores = await json(await new Client(back.url).get('/api/leaderboards/fx-best-desc?limit=100'))
  t.same(scores.records.map((r: { username: string; score: number }) => [r.username, r.score]), [[name('move'), 7]], 'the embedded board as it was')
})

t.test('leaderboards: created at start, written on one instance, read on the other, anonymous too', async (t) => {
  if (fake) {
    for (const id of ['fx-best-desc', 'fx-incr-asc', 'fx-daily']) t.equal(fake.state.leaderboards.boards.get(id)?.enableRanks, true, `${id} exists with ranks`)
    t.same(fake.state.leaderboards.boards.get('fx-daily')!.resetSchedule, '0 0 * * *')
  }
  const board = 'fx-set-desc'
  const first = await register(a, name('s1'))
  const second = await register(b, name('s2'))
  const submit = (c: Client, score: number) => c.post('/api/leaderboards/submit', { leaderboardId: board, score, metadata: { lap: 1 } })
  // Scores above every earlier run's, so ranks 1 and 2 hold on a reused real Nakama too.
  const top = Date.now() * 2
  const res = await submit(first.client, top)
  t.equal(res.status, 200)
  t.same(await res.json(), { success: true, record: { leaderboard_id: board, owner_id: first.id, username: name('s1'), score: top, subscore: 0, rank: 1 } })
  await submit(second.client, top - 1)
  const anon = await json(await new Client(b.url).get(`/api/leaderboards/${board}?limit=2`))
  t.same(anon.records.slice(0, 2), [
    { owner_id: first.id, username: name('s1'), score: top, subscore: 0, rank: 1 },
    { owner_id: second.id, username: name('s2'), score: top - 1, subscore: 0, rank: 2 },
  ])
  t.equal(anon.ownRecord, null)
  const own = await json(await on(a, second.client).get(`/api/leaderboards/${board}?limit=1`))
  t.same(own.ownRecord, { owner_id: second.id, username: name('s2'), score: top - 1, subscore: 0, rank: 2 })
  t.type(own.nextCursor, 'string')
  const page2 = await json(await new Client(a.url).get(`/api/leaderboards/${board}?limit=1&cursor=${encodeURIComponent(own.nextCursor)}`))
  t.same(page2.records[0], { owner_id: second.id, username: name('s2'), score: top - 1, subscore: 0, rank: 2 })
})

t.test('bad submissions change nothing in Nakama; launches are recorded there', onFake, async (t) => {
  const { client, id } = await register(a, name('bad'))
  await client.post('/api/leaderboards/submit', { leaderboardId: 'fx-best-desc', score: 100, metadata: { k: 1 } })
  // Scores are BIGINT in the fake, as in Nakama's table.
  const stored = () => JSON.stringify(fake!.state.leaderboards.list('fx-best-desc', [id], undefined, '', 0, Date.now()).ownerRecords, (_, v: unknown) => typeof v === 'bigint' ? `${v}n` : v)
  const before = stored()
  for (const body of [{ leaderboardId: 'fx-best-desc', score: -1 }, { leaderboardId: 'fx-best-desc', score: 1.5 }, { leaderboardId: 'nope', score: 1 }, { leaderboardId: 'fx-best-desc', score: 200, metadata: [] }]) {
    t.ok([400, 404].includes((await client.post('/api/leaderboards/submit', body)).status), JSON.stringify(body))
  }
  t.equal(stored(), before)
  const launch = await json(await client.post('/api/games/fixture-boards/launch'))
  const object = fake!.state.read('playfield_launches', launch.session.id, SYSTEM_USER)
  t.ok(object, 'the launch is a system-owned storage object')
  t.match(JSON.parse(object!.value), { userId: id, gameId: 'fixture-boards', time: Number })
})

t.test('a board Nakama has and the catalogue does not name takes no score: 404 LEADERBOARD_NOT_FOUND, nothing written', onFake, async (t) => {
  // Another tool (or an older catalogue) created it; the platform writes only to boards it serves.
  const board = name('outside')
  fake!.runtime.nk.leaderboardCreate(board, false, 'desc', 'best', null, {}, true)
  const { client, id } = await register(a, name('outsider'))
  const res = await client.post('/api/leaderboards/submit', { leaderboardId: board, score: 5 })
  t.equal(res.status, 404)
  t.same(await res.json(), { error: `no leaderboard "${board}"`, code: 'LEADERBOARD_NOT_FOUND' })
  t.same(fake!.state.leaderboards.list(board, [id], undefined, '', 0, Date.now()).ownerRecords, [], 'no record in Nakama')
})

t.test('a board Nakama keeps without ranks (3.23+, created by hand) is logged once, with the fix', onFake, async (t) => {
  const board = fake!.state.leaderboards.boards.get('fx-best-desc')!
  board.enableRanks = false
  t.teardown(() => void (board.enableRanks = true))
  const { client } = await register(a, name('unranked'))
  for (const score of [3, 4]) {
    const res = await client.post('/api/leaderboards/submit', { leaderboardId: 'fx-best-desc', score })
    t.equal(res.status, 200)
    t.equal((await json(res)).record.rank, 0, "Nakama's answer: no rank")
  }
  await sleep(100)
  const lines = a.logs.filter((l) => l.event === 'nakama.unranked')
  t.equal(lines.length, 1, 'said once per board')
  t.match(lines[0], { leaderboardId: 'fx-best-desc', fix: /delete it in Nakama's console/ })
})

t.test("a user's own backend token can neither call the module's RPCs nor rename itself through Nakama", async (t) => {
  const { client, id } = await register(a, name('evil'))
  const { token } = await json(await client.get('/api/auth/backend-token'))
  const rpcAs = (rpcId: string, payload: unknown) => fetch(`${nakama.url}/v2/rpc/${rpcId}?unwrap`, {
    method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(payload),
  })
  const attacks: Array<[string, unknown]> = [
    ['playfield_set_role', { username: name('evil'), role: 'admin', grant: true }],
    ['playfield_write_record', { leaderboardId: 'fx-best-desc', ownerId: id, username: name('evil'), score: Date.now() * 4, subscore: 0, operator: 'best' }],
    ['playfield_rename', { userId: id, username: name('evil_renamed'), rule: { capacity: 1000, refill: 1000, intervalMs: 1 }, now: Date.now() }],
  ]
  for (const [rpcId, payload] of attacks) {
    const res = await rpcAs(rpcId, payload)
    t.equal(res.status, 403, rpcId)
    t.match(await res.json(), { code: 7, message: 'playfield RPCs are server-to-server: call them with the runtime HTTP key' }, rpcId)
  }
  const put = (body: unknown) => fetch(`${nakama.url}/v2/account`, { method: 'PUT', headers: { authorization: `Bearer ${token}` }, body: JSON.stringify(body) })
  const renamed = await put({ username: name('evil2') })
  t.equal(renamed.status, 403, 'PUT /v2/account with a new username')
  t.same(await renamed.json(), { code: 7, message: 'usernames change only through the platform (PUT /api/user/username)' })
  t.same((await json(await client.get('/api/auth/session'))).user, { id, username: name('evil'), roles: [] }, 'no role, the same name')
  t.equal((await json(await client.get('/api/leaderboards/fx-best-desc?limit=1'))).ownRecord, null, 'no record written')
  t.equal((await put({ display_name: 'Evil' })).status, 200, 'other account fields still change')
  const account = await (await fetch(`${nakama.url}/v2/account`, { headers: { authorization: `Bearer ${token}` } })).json() as { user: Record<string, unknown> }
  t.match(account.user, { username: name('evil'), display_name: 'Evil' })
})

t.test('DEV_ACCESS_USERS names match exactly on Nakama, where ALICE and alice are two accounts', async (t) => {
  const p = await startPlatform({ env: { ...env, DEV_ACCESS_USERS: name('Gate') } })
  t.teardown(() => p.stop())
  const listed = await register(p, name('Gate'))
  const other = await register(p, name('GATE'))
  t.not(other.id, listed.id)
  const ticket = (c: Client) => c.post('/dev/terminal/ticket')
  const refused = await ticket(other.client)
  t.equal(refused.status, 403, 'another case of a listed name is another account')
  t.match(await refused.json(), { code: 'FORBIDDEN' })
  t.equal((await other.client.get('/dev/terminal')).status, 403)
  const admitted = await ticket(listed.client)
  t.equal(admitted.status, 200, 'the listed name, exactly')
  t.match(await admitted.json(), { success: true, ticket: String })
})

t.test('bin/platform users grant works on Nakama at once (exact names)', async (t) => {
  const { client, id } = await register(a, name('Dev'))
  const users = (...args: string[]) => usersCommand(env, ...args)
  const granted = await users('grant', name('Dev'), 'developer')
  t.equal(granted.code, 0, granted.stdout + granted.stderr)
  t.same((await json(await on(b, client).get('/api/auth/session'))).user, { id, username: name('Dev'), roles: ['developer'] })
  t.not((await users('grant', name('dev'), 'developer')).code, 0, 'Nakama names are exact: another case is another (unknown) user')
})

t.test("on Nakama too, an open terminal's ticket is admitted until its session logs out or its role is revoked", async (t) => {
  const secret = randomBytes(32).toString('hex')
  const p = await startPlatform({ env: { ...env, TERMINAL_TICKET_SECRET: secret } })
  t.teardown(() => p.stop())
  const users = (...args: string[]) => usersCommand(env, ...args)
  const challenge = randomBytes(18).toString('base64url')
  const ask = async (ticket: string) => {
    const { proof, ...answer } = await json(await new Client(p.url).post('/dev/terminal/access', { ticket, challenge }, { authorization: `Bearer ${bridgeCredential([secret])}` }))
    t.ok(isAccessProof([secret], challenge, ticket, answer.admitted ? null : answer.reason, proof), 'proved')
    return answer
  }
  const ticketOf = async (client: Client) => (await json(await client.post('/dev/terminal/ticket'))).ticket as string
  const leaving = await register(p, name('AccessOut'))
  const revoked = await register(p, name('AccessRole'))
  for (const who of [name('AccessOut'), name('AccessRole')]) t.equal((await users('grant', who, 'developer')).code, 0)
  const outTicket = await ticketOf(leaving.client)
  const roleTicket = await ticketOf(revoked.client)
  t.same(await ask(outTicket), { success: true, admitted: true })
  t.same(await ask(roleTicket), { success: true, admitted: true })
  // A refresh replaces the cookie's refresh token; the ticket keeps the one it was minted with.
  t.equal((await leaving.client.get('/api/auth/backend-token')).status, 200)
  t.equal((await leaving.client.post('/api/auth/logout')).status, 200)
  t.same(await ask(outTicket), { success: true, admitted: false, reason: 'signed out' })
  t.equal((await users('revoke', name('AccessRole'), 'developer')).code, 0)
  t.same(await ask(roleTicket), { success: true, admitted: false, reason: 'developer access revoked' })
})

t.test('SIGHUP reload creates the new leaderboards in Nakama', async (t) => {
  const dir = tempDir()
  const native = JSON.parse(readFileSync(path.join(FIXTURES, 'fixture-native.json'), 'utf8'))
  writeFileSync(path.join(dir, 'fixture-native.json'), JSON.stringify(native))
  const p = await startPlatform({ env: { ...env, MANIFESTS_DIR: dir } })
  t.teardown(() => p.stop())
  const board = `fx-extra-${tag}`
  const extra = { ...native, id: 'fixture-extra', playUrl: '/play/fixture-extra', leaderboards: { default: board, ids: [board], configs: { [board]: { type: 'wins' } } } }
  writeFileSync(path.join(dir, 'fixture-extra.json'), JSON.stringify(extra))
  p.child.kill('SIGHUP')
  for (let i = 0; i < 100 && !p.logs.some((l) => l.event === 'nakama.leaderboards' && (l.created as string[]).includes(board)); i++) {
    await sleep(50)
  }
  t.ok(p.logs.some((l) => l.event === 'nakama.leaderboards' && (l.created as string[]).includes(board)), 'created on reload')
  if (fake) t.match(fake.state.leaderboards.boards.get(board), { operator: 'incr', sortOrder: 'desc', enableRanks: true })

  // Nakama never changes an existing board; a new reset schedule is reported like other settings.
  const rescheduled = { ...extra, leaderboards: { ...extra.leaderboards, configs: { [board]: { type: 'wins', resetSchedule: '30 6 * * *' } } } }
  writeFileSync(path.join(dir, 'fixture-extra.json'), JSON.stringify(rescheduled))
  const differing = () => p.logs.some((l) => l.event === 'nakama.leaderboards' && (l.differing as string[]).includes(board))
  p.child.kill('SIGHUP')
  for (let i = 0; i < 100 && !differing(); i++) await sleep(50)
  t.ok(differing(), 'a changed reset schedule is logged as differing')
})

t.test('a catalogue synced in several calls is logged as one line: every board created, and each call\'s unchecked ones', onFake, async (t) => {
  // 700 boards with a schedule: about 130 KB, more than one call of 64 KiB.
  const dir = tempDir()
  const native = JSON.parse(readFileSync(path.join(FIXTURES, 'fixture-native.json'), 'utf8'))
  const ids = Array.from({ length: 700 }, (_, i) => `fx-many-${tag}-${String(i).padStart(3, '0')}`)
  const configs = Object.fromEntries(ids.map((id) => [id, { type: 'wins', resetSchedule: '0 0 * * 1' }]))
  writeFileSync(path.join(dir, 'fixture-native.json'), JSON.stringify({ ...native, leaderboards: { default: ids[0], ids, configs } }))
  // The module as it is, but saying it could not compare the first board of each call in its second.
  const sync = fake!.runtime.rpcs.get('playfield_sync_leaderboards')!
  const firsts: string[] = []
  fake!.runtime.rpcs.set('playfield_sync_leaderboards', (ctx, logger, nk, payload) => {
    const first = (JSON.parse(payload) as { boards: { id: string }[] }).boards[0]!.id
    firsts.push(first)
    return JSON.stringify({ ...(JSON.parse(sync(ctx, logger, nk, payload) as string) as object), unchecked: [first] })
  })
  t.teardown(() => fake!.runtime.rpcs.set('playfield_sync_leaderboards', sync))
  const p = await startPlatform({ env: { ...env, MANIFESTS_DIR: dir } })
  t.teardown(() => p.stop())
  const line = (): Record<string, unknown> | undefined => p.logs.find((l) => l.event === 'nakama.leaderboards')
  for (let i = 0; i < 100 && !line(); i++) await sleep(50)
  t.ok(firsts.length >= 2, `synced in ${firsts.length} calls`)
  t.same((line()?.created as string[]).slice().sort(), ids, 'every board of every call is logged as created')
  t.same(line()?.unchecked, firsts, 'and the unchecked ones of every call')
  t.equal(p.logs.filter((l) => l.event === 'nakama.leaderboards').length, 1, 'one line for the sync')
})

t.test('Nakama down: 503 BACKEND_UNAVAILABLE, no cookie, nothing half-done; recovery when it returns', onFake, async (t) => {
  const { client, id } = await register(a, name('down'))
  const users = fake!.state.users.size
  await fake!.stop()
  for (const [label, res] of [
    ['guest', await new Client(a.url).post('/api/auth/guest')],
    ['register', await new Client(a.url).post('/api/auth/register', { username: name('never'), password: 'correct horse' })],
    ['session', await client.get('/api/auth/session')],
    ['rename', await client.put('/api/user/username', { username: name('never2') })],
    ['board', await new Client(a.url).get('/api/leaderboards/fx-best-desc')],
  ] as const) {
    t.equal(res.status, 503, `${label}: 503`)
    t.same(await res.json(), { error: 'the game backend is unavailable; try again shortly', code: 'BACKEND_UNAVAILABLE' }, `${label}: body`)
    t.same(res.headers.getSetCookie(), [], `${label}: no cookie`)
  }
  t.equal((await new Client(a.url).get('/api/games')).status, 200, 'the catalogue is served meanwhile')

  // Down in the middle of a rename: the request is in Nakama when the node goes away.
  await fake!.start()
  let held!: () => void
  const arrived = new Promise<void>((resolve) => (held = resolve))
  fake!.intercept = (method, p) => (p === '/v2/rpc/playfield_rename' ? (held(), 'hang') : undefined)
  const pending = on(b, client).put('/api/user/username', { username: name('never3') })
  await arrived
  await fake!.stop()
  const cut = await pending
  t.equal(cut.status, 503)
  t.same(cut.headers.getSetCookie(), [])
  fake!.intercept = null
  await fake!.start()
  t.equal(fake!.state.users.size, users, 'no account was created')
  t.equal(fake!.state.users.get(id)!.username, name('down'), 'the name is unchanged')
  t.equal(fake!.state.read('playfield_rename_buckets', id, SYSTEM_USER), undefined, 'no rename was spent')
  const again = await new Client(a.url).post('/api/auth/guest')
  t.equal(again.status, 200, 'recovered')
  t.equal((await client.get('/api/auth/session')).status, 200, 'the old session works again')
})

t.test('a platform started while Nakama is down serves its catalogue and creates the boards once Nakama is back', onFake, async (t) => {
  const late = await startFakeNakama()
  t.teardown(() => late.close())
  await late.stop()
  const p = await startPlatform({ env: { ...env, ...nakamaEnv(late) } })
  t.teardown(() => p.stop())
  t.ok(p.logs.some((l) => l.event === 'nakama.leaderboards_pending'), 'the sync is pending')
  t.equal((await new Client(p.url).get('/api/games')).status, 200)
  t.equal((await new Client(p.url).post('/api/auth/guest')).status, 503)
  await late.start()
  for (let i = 0; i < 100 && !p.logs.some((l) => l.event === 'nakama.leaderboards'); i++) await sleep(50)
  t.ok(late.state.leaderboards.boards.has('fx-best-desc'), 'created after Nakama came back')
  t.equal((await new Client(p.url).post('/api/auth/guest')).status, 200)
})

/** A loopback server answering every request with this status and HTML page; resolves to its URL. */
async function htmlServer(t: Test, status: number, page: string): Promise<string> {
  const server = http.createServer((req, res) => res.writeHead(status, { 'content-type': 'text/html' }).end(page))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  t.teardown(() => new Promise((resolve) => server.close(resolve)))
  return `http://127.0.0.1:${port}`
}

/** Run `bin/platform users …` with this environment; resolves with the exit code and both streams. */
function usersCommand(commandEnv: Record<string, string>, ...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return runUsers({ DATA_DIR: tempDir(), ...commandEnv }, ...args)
}

t.test('start-up: a refused key, a Nakama without the module, or a URL that is not Nakama is one config line and exit 2', onFake, async (t) => {
  const refusing = await startFakeNakama({ serverKey: 'the-real-server-key', httpKey: 'the-real-http-key' })
  const bare = await startFakeNakama({ module: null })
  const otherUrl = await htmlServer(t, 404, '<h1>Not Found</h1>')
  const page = await htmlServer(t, 200, '<!doctype html><title>Welcome</title>')
  t.teardown(() => Promise.all([refusing.close(), bare.close()]))
  const cases: Array<[string, Record<string, string>, string]> = [
    ['wrong server key', { ...nakamaEnv(refusing), NAKAMA_SERVER_KEY: 'defaultkey' },
      `NAKAMA_SERVER_KEY: (10 characters, not shown) is refused by Nakama at ${refusing.url} (Server key invalid); expected Nakama's socket.server_key`],
    ['wrong HTTP key', { ...nakamaEnv(refusing), NAKAMA_HTTP_KEY: 'defaulthttpkey' },
      `NAKAMA_HTTP_KEY: (14 characters, not shown) is refused by Nakama at ${refusing.url} (HTTP key invalid); expected Nakama's runtime.http_key`],
    ['no module', nakamaEnv(bare),
      `NAKAMA_URL: "${bare.url}" is a Nakama without the playfield module (RPC function not found); expected a Nakama running nakama/modules/playfield.js (README: Installing the module)`],
    ['not Nakama', { ...nakamaEnv(refusing), NAKAMA_URL: otherUrl },
      `NAKAMA_URL: "${otherUrl}" does not answer as Nakama (POST /v2/account/authenticate/custom: HTTP 404 Not Found); expected the URL of Nakama's HTTP API, such as http://127.0.0.1:7350`],
    ['a page, not JSON', { ...nakamaEnv(refusing), NAKAMA_URL: page },
      `NAKAMA_URL: "${page}" does not answer as Nakama (POST /v2/account/authenticate/custom: HTTP 200, not JSON); expected the URL of Nakama's HTTP API, such as http://127.0.0.1:7350`],
  ]
  for (const [label, nakamaVars, line] of cases) {
    const error = await startPlatform({ env: { ...env, ...nakamaVars } }).then(() => new Error('started'), (err: Error) => err)
    t.equal(error.message, `process exited (2) before ready: config: ${line}\n`, label)
  }
  const users = await usersCommand({ ...nakamaEnv(refusing), NAKAMA_HTTP_KEY: 'defaulthttpkey' }, 'list')
  t.same({ code: users.code, stderr: users.stderr }, { code: 2, stderr: `config: ${cases[1]![2]}\n` }, 'users too')
  t.equal(refusing.state.users.size, 0, 'the server-key check never creates an account')
})

t.test('Nakama refusing a login for its own reasons (429) is 503, never INVALID_CREDENTIALS, and no failed sign-in; a guest whose names are all called taken gets 503', onFake, async (t) => {
  const own = await startFakeNakama()
  t.teardown(() => own.close())
  const p = await startPlatform({ env: { ...env, ...nakamaEnv(own) } })
  t.teardown(() => p.stop())
  await register(p, name('busy'))
  own.intercept = (_method, route) => (route === '/v2/account/authenticate/email' ? { status: 429, code: 8, message: 'Too many requests.' } : undefined)
  for (let i = 0; i < 12; i++) {
    const res = await new Client(p.url).post('/api/auth/login', { username: name('busy'), password: 'correct horse' })
    t.equal(res.status, 503, `login ${i + 1}: 503`)
    t.same(await res.json(), { error: 'the game backend is unavailable; try again shortly', code: 'BACKEND_UNAVAILABLE' })
  }
  t.match(p.logs.find((l) => l.event === 'nakama.refused'), { request: 'POST /v2/account/authenticate/email', status: 429, problem: 'Too many requests.' })
  own.intercept = null
  t.equal((await new Client(p.url).post('/api/auth/login', { username: name('busy'), password: 'correct horse' })).status, 200, 'none of them counted as a failed sign-in')
  const wrong = await new Client(p.url).post('/api/auth/login', { username: name('busy'), password: 'wrong horse' })
  t.equal(wrong.status, 401, 'a wrong password is still INVALID_CREDENTIALS')

  own.intercept = (_method, route) => (route === '/v2/rpc/playfield_write_record' ? { status: 429, code: 8, message: 'Too many requests.' } : undefined)
  const { client } = await register(p, name('busy2'))
  const submit = await client.post('/api/leaderboards/submit', { leaderboardId: 'fx-best-desc', score: 1 })
  t.equal(submit.status, 503, 'an overloaded Nakama is 503 on any call, not 500')
  t.same(await submit.json(), { error: 'the game backend is unavailable; try again shortly', code: 'BACKEND_UNAVAILABLE' })
  const refusal = () => p.logs.find((l) => l.event === 'nakama.refused' && String(l.request).startsWith('POST /v2/rpc/playfield_write_record'))
  for (let i = 0; i < 50 && !refusal(); i++) await sleep(20)
  t.match(refusal(), { status: 429, problem: 'Too many requests.' }, 'logged')

  own.intercept = (_method, route) => (route === '/v2/account/authenticate/custom' ? { status: 409, code: 6, message: 'Username is already in use.' } : undefined)
  const before = own.calls.get('POST /v2/account/authenticate/custom') ?? 0
  const guest = await new Client(p.url).post('/api/auth/guest')
  t.equal(guest.status, 503)
  t.same(await guest.json(), { error: 'the game backend is unavailable; try again shortly', code: 'BACKEND_UNAVAILABLE' })
  await sleep(200)
  t.equal((own.calls.get('POST /v2/account/authenticate/custom') ?? 0) - before, 5, 'five names drawn, then it stops')
  own.intercept = null
  t.equal((await new Client(p.url).post('/api/auth/guest')).status, 200)
})

t.test("at run time, a refused key or a missing module is 503 for users, logged with its cause, and no failed sign-in", onFake, async (t) => {
  const own = await startFakeNakama()
  t.teardown(() => own.close())
  const p = await startPlatform({ env: { ...env, ...nakamaEnv(own) } })
  t.teardown(() => p.stop())
  const { client } = await register(p, name('rt'))
  const unavailable = { error: 'the game backend is unavailable; try again shortly', code: 'BACKEND_UNAVAILABLE' }
  const misconfigured = () => p.logs.filter((l) => l.event === 'nakama.misconfigured')
  own.serverKey = 'rotated-server-key'
  for (let i = 0; i < 12; i++) {
    const res = await new Client(p.url).post('/api/auth/login', { username: name('rt'), password: 'correct horse' })
    t.equal(res.status, 503, `login ${i + 1}: 503, not 401 and not 429`)
    t.same(await res.json(), unavailable)
  }
  await sleep(100)
  t.equal(misconfigured().length, 12, 'one log line per occurrence')
  t.match(misconfigured()[0], { variable: 'NAKAMA_SERVER_KEY', problem: 'Server key invalid', status: 401, request: 'POST /v2/account/authenticate/email', expected: "Nakama's socket.server_key" })
  own.serverKey = 'defaultkey'
  t.equal((await new Client(p.url).post('/api/auth/login', { username: name('rt'), password: 'correct horse' })).status, 200, 'none of them counted as a failed sign-in')

  own.httpKey = 'rotated-http-key'
  await sleep(1_100) // the 1 s "still active" cache
  const session = await client.get('/api/auth/session')
  t.equal(session.status, 503)
  t.same(await session.json(), unavailable)
  own.httpKey = 'defaulthttpkey'
  const getAccount = own.runtime.rpcs.get('playfield_get_account')!
  own.runtime.rpcs.delete('playfield_get_account')
  const missing = await client.get('/api/auth/session')
  own.runtime.rpcs.set('playfield_get_account', getAccount)
  t.equal(missing.status, 503, 'RPC function not found: not 500 INTERNAL')
  t.same(await missing.json(), unavailable)
  await sleep(100)
  t.match(misconfigured().slice(12), [
    { variable: 'NAKAMA_HTTP_KEY', problem: 'HTTP key invalid', status: 401, expected: "Nakama's runtime.http_key" },
    { variable: 'NAKAMA_URL', problem: 'RPC function not found', status: 404, request: 'POST /v2/rpc/playfield_get_account' },
  ])
  t.equal((await client.get('/api/auth/session')).status, 200, 'works again once fixed')
})

t.test("Nakama's default 60 s tokens: one warning naming session.token_expiry_sec", onFake, async (t) => {
  const short = await startFakeNakama({ session: { tokenExpirySec: 60 } })
  t.teardown(() => short.close())
  const p = await startPlatform({ env: { ...env, ...nakamaEnv(short) } })
  t.teardown(() => p.stop())
  t.notOk(p.logs.some((l) => l.event === 'nakama.short_tokens'), 'nothing said before a token is issued')
  const { client } = await register(p, name('short'))
  await new Client(p.url).post('/api/auth/guest')
  for (let i = 0; i < 2; i++) t.equal((await client.get('/api/auth/backend-token')).status, 200)
  await sleep(100)
  const warnings = p.logs.filter((l) => l.event === 'nakama.short_tokens')
  t.equal(warnings.length, 1, 'once per process')
  t.match(warnings[0], { tokenLifetimeSec: Number, neededSec: 300, fix: /session\.token_expiry_sec/ })
  const lifetime = warnings[0]!.tokenLifetimeSec as number
  t.ok(lifetime > 55 && lifetime <= 60, `the token's lifetime, about 60 s (${lifetime})`)
  t.notOk(p.logs.some((l) => l.event === 'nakama.short_tokens' && l !== warnings[0]))
  const quiet = await startPlatform({ env })
  t.teardown(() => quiet.stop())
  await register(quiet, name('long'))
  await sleep(100)
  t.notOk(quiet.logs.some((l) => l.event === 'nakama.short_tokens'), 'no warning with long tokens')
})

t.test('a login Nakama will not renew (logged out straight at Nakama) ends the platform session at its next refresh', onFake, async (t) => {
  // 60 s tokens: every backend-token call refreshes (CONTRACT §3's 5 minutes cannot be met).
  const short = await startFakeNakama({ session: { tokenExpirySec: 60 } })
  t.teardown(() => short.close())
  const p = await startPlatform({ env: { ...env, ...nakamaEnv(short) } })
  t.teardown(() => p.stop())
  const { client } = await register(p, name('direct'))
  const issued = await json(await client.get('/api/auth/backend-token'))
  t.equal(issued.success, true)
  const logout = await fetch(`${short.url}/v2/session/logout`, {
    method: 'POST', headers: { authorization: `Bearer ${issued.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ token: issued.token, refresh_token: issued.refresh_token }),
  })
  t.equal(logout.status, 200, "the front-end's own logout at Nakama (README: use the platform's)")
  const refused = await client.get('/api/auth/backend-token')
  t.same([refused.status, await refused.json()], [401, { error: 'no session', code: 'NO_SESSION' }], 'Nakama refuses the refresh')
  const session = await client.get('/api/auth/session')
  t.same([session.status, await session.json()], [401, { error: 'no session', code: 'NO_SESSION' }], 'and the session has ended with it')
  t.equal((await client.post('/api/leaderboards/submit', { leaderboardId: 'fx-best-desc', score: 5 })).status, 401, 'no score is taken on it')
  t.equal((await client.post('/api/auth/login', { username: name('direct'), password: 'correct horse' })).status, 200, 'signing in again works')
  t.equal((await client.get('/api/auth/backend-token')).status, 200, 'with tokens Nakama renews')
})

t.test('storage contention past the module\'s retries: a rename is 503, `users grant` says so in one line', onFake, async (t) => {
  const { client, id } = await register(a, name('jam'))
  const contention = contendStorage(t, fake!)
  const res = await client.put('/api/user/username', { username: name('jam2') })
  t.equal(res.status, 503)
  t.same(await res.json(), { error: 'the game backend is unavailable; try again shortly', code: 'BACKEND_UNAVAILABLE' })
  const granted = await usersCommand(env, 'grant', name('jam'), 'developer')
  t.same(granted, { code: 1, stdout: '', stderr: 'users: the game backend is unavailable; try again shortly\n' })
  contention.restore()
  t.same((await json(await client.get('/api/auth/session'))).user, { id, username: name('jam'), roles: [] }, 'nothing changed')
})
