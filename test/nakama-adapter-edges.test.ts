import t, { type Test } from 'tap'
import { setTimeout as sleep } from 'node:timers/promises'
import { randomBytes } from 'node:crypto'
import { loadPlatformConfig } from '../lib/config.js'
import { HttpError } from '../lib/http/errors.js'
import { RENAME_RULE } from '../lib/limiter.js'
import type { Backend } from '../lib/backend/backend.js'
import { NakamaClient } from '../lib/backend/nakama/client.js'
import { createNakamaBackend } from '../lib/backend/nakama/index.js'
import { Revocations } from '../lib/backend/nakama/revocations.js'
import { nakamaEnv } from './fake-nakama/env.js'
import { signToken, type Claims } from './fake-nakama/jwt.js'
import { decodeJwt, expectRejection } from './helpers/accounts.js'
import { startFakeNakama, type Intercept } from './fake-nakama/server.js'

// Edges of the Nakama adapter (lib/backend/nakama) that README "Scaling out with Nakama" and
// lib/backend/backend.ts promise and the other Nakama tests leave open: which refusals of Nakama end
// a session or mean a taken name, the guest name drawn again, the one retry of reads, answers of a
// shape Nakama or the module never gives, the incr ceiling, the background leaderboard sync, and
// logout through the module. Always on the fake: each case makes Nakama (or a proxy before it)
// answer in a way a real server cannot be made to on demand.

const fake = await startFakeNakama()
t.teardown(() => fake.close())

function backend(log?: (entry: Record<string, unknown>) => void): Backend {
  return createNakamaBackend(loadPlatformConfig({ ...nakamaEnv(fake), DATA_DIR: '/tmp' }).nakama!, log ? { log } : {})
}

const tag = randomBytes(3).toString('hex')
const name = (base: string) => `${base}_${tag}`
const claims = (token: string) => decodeJwt(token).claims as unknown as Claims
const calls = (route: string) => fake.calls.get(route) ?? 0

/** Answer `route` with `action` for the next `times` requests to it, then serve normally. */
function interceptNext(t: Test, route: string, action: Intercept, times = 1): void {
  let left = times
  fake.intercept = (_method, path) => (path === route && left-- > 0 ? action : undefined)
  t.teardown(() => void (fake.intercept = null))
}

t.test('a refresh Nakama refuses with 401, 403 or 404 ends the session on every instance: 401 NO_SESSION, never 503', async (t) => {
  const b = backend()
  const other = backend() // a second platform instance on the same Nakama
  const route = '/v2/account/session/refresh'
  const refusals: [string, Intercept | null][] = [
    // Readable, unexpired, never logged out, but not signed with Nakama's refresh key: Nakama's own 401.
    ["Nakama's 401 (invalid or expired)", null],
    ["Nakama's 403 (banned)", { status: 403, code: 7, message: 'User account banned.' }],
    ["Nakama's 404 (deleted)", { status: 404, code: 5, message: 'User account not found.' }],
  ]
  for (const [i, [what, answer]] of refusals.entries()) {
    const s = await b.register(name(`refr${i}`), 'password123')
    t.ok(await other.sessionActive(s.refreshToken, s.userId), `${what}: active before`)
    const refreshed = answer ? s.refreshToken : signToken(claims(s.refreshToken), 'not-the-refresh-key')
    if (answer) interceptNext(t, route, answer)
    await expectRejection(t, b.refresh(refreshed), 401, 'NO_SESSION', what)
    fake.intercept = null
    t.notOk(await b.sessionActive(s.refreshToken, s.userId), `${what}: the session has ended here`)
    await sleep(1_100) // past the other instance's one second of trust in its "active" answer
    t.notOk(await other.sessionActive(s.refreshToken, s.userId), `${what}: and on the other instance`)
    await expectRejection(t, b.refresh(s.refreshToken), 401, 'NO_SESSION', `${what}: the genuine refresh token no longer refreshes`)
  }
  const kept = await b.register(name('refrok'), 'password123')
  interceptNext(t, route, { status: 500, code: 13, message: 'internal' })
  await expectRejection(t, b.refresh(kept.refreshToken), 503, 'BACKEND_UNAVAILABLE', "Nakama's 500 is no refusal")
  t.ok(await b.sessionActive(kept.refreshToken, kept.userId), 'and ends nothing')
  t.equal((await b.refresh(kept.refreshToken)).userId, kept.userId, 'the session refreshes once Nakama answers')
})

t.test('a taken name at register is 409 USERNAME_TAKEN whichever way Nakama says it, and creates nothing', async (t) => {
  const b = backend()
  const route = '/v2/account/authenticate/email'
  const wordings: Array<[number, number, string]> = [
    [409, 6, 'Username is already in use.'],
    [400, 3, 'Username is already in use.'],
    [400, 3, 'rpc error: code = AlreadyExists desc = Username is already in use.'],
  ]
  for (const [status, code, message] of wordings) {
    const username = name(`tk${status}${code}${message.length}`)
    interceptNext(t, route, { status, code, message })
    await expectRejection(t, b.register(username, 'password123'), 409, 'USERNAME_TAKEN', `${status}/${code} ${JSON.stringify(message)}`)
    t.equal(fake.state.byUsername(username), undefined, 'nothing was created')
  }
})

t.test('a guest name Nakama calls taken is drawn again: four clashes in a row still sign a guest in', async (t) => {
  const b = backend()
  const route = '/v2/account/authenticate/custom'
  const before = calls(`POST ${route}`)
  interceptNext(t, route, { status: 409, code: 6, message: 'Username is already in use.' }, 4)
  const guest = await b.authenticateGuest()
  t.match(guest.username, /^guest-[0-9a-f]{8}$/)
  t.equal(fake.state.users.get(guest.userId)?.username, guest.username, 'the account exists in Nakama under that name')
  t.equal(calls(`POST ${route}`), before + 5, 'four refused names, then the fifth')
})

t.test('every read survives one 5xx by a second try; a write is sent once, and the 5xx that ends it is logged', async (t) => {
  const logs: Array<Record<string, unknown>> = []
  const b = backend((entry) => logs.push(entry))
  const s = await b.register(name('rd'), 'password123')
  await b.grantRole(name('rd'), 'developer')
  const board = `rd_${tag}`
  await b.syncLeaderboards([{ id: board, operator: 'best', sortOrder: 'desc', resetSchedule: null, authoritative: true }])
  await b.writeRecord({ leaderboardId: board, ownerId: s.userId, username: s.username, score: 9, subscore: 0 }, Date.now())

  const reads: Array<[string, () => Promise<unknown>, (t: Test, answer: unknown) => void]> = [
    ['playfield_session_revoked', () => b.sessionActive(s.refreshToken, s.userId), (t, a) => t.equal(a, true)],
    ['playfield_get_account', () => b.getAccount(s.userId), (t, a) => t.same(a, { id: s.userId, username: name('rd'), roles: ['developer'] })],
    ['playfield_list_privileged', () => b.listPrivileged(), (t, a) => t.ok((a as Array<{ id: string }>).some((x) => x.id === s.userId))],
    ['playfield_list_records', () => b.listRecords({ leaderboardId: board, limit: 5 }, Date.now()),
      (t, a) => t.same((a as { records: Array<{ owner_id: string; score: number }> }).records.map((r) => [r.owner_id, r.score]), [[s.userId, 9]])],
  ]
  for (const [rpc, read, check] of reads) {
    const route = `/v2/rpc/${rpc}`
    const before = calls(`POST ${route}`)
    interceptNext(t, route, 'fail')
    check(t, await read())
    t.equal(calls(`POST ${route}`), before + 2, `${rpc}: one 500, then the answer`)
  }

  const route = '/v2/rpc/playfield_record_launch'
  const before = calls(`POST ${route}`)
  interceptNext(t, route, 'fail')
  await expectRejection(t, b.recordLaunch({ sessionId: `rd-${tag}`, gameId: 'g', userId: s.userId, time: Date.now() }), 503, 'BACKEND_UNAVAILABLE')
  t.equal(calls(`POST ${route}`), before + 1, 'a launch is not sent twice')
  t.same(logs, [{ event: 'nakama.refused', request: `POST ${route}?unwrap`, status: 500, problem: 'failed on its side' }],
    'logged once, with the call and the status; the 500s a retry rode over are not')
})

t.test("a refresh token is active only for the user it was issued to, and only until its exp", async (t) => {
  const b = backend()
  const one = await b.register(name('own1'), 'password123')
  const two = await b.register(name('own2'), 'password123')
  t.equal(await b.sessionActive(one.refreshToken, one.userId), true)
  t.equal(await b.sessionActive(one.refreshToken, two.userId), false, "another user's refresh token")
  // Signed with Nakama's own refresh key and never logged out: only its exp has passed.
  const expired = signToken({ ...claims(two.refreshToken), exp: Math.floor(Date.now() / 1000) - 60 }, 'fake-refresh-encryption-key')
  t.equal(await b.sessionActive(expired, two.userId), false, 'an expired refresh token')
  await expectRejection(t, b.refresh(expired), 401, 'NO_SESSION')
  t.equal(await b.sessionActive(two.refreshToken, two.userId), true, 'the live one still is')
})

t.test("a session has ended (an open terminal's check) once logged out, not when one of its refresh tokens only expired", async (t) => {
  const b = backend()
  const one = await b.register(name('end1'), 'password123')
  const two = await b.register(name('end2'), 'password123')
  t.equal(await b.sessionEnded(one.refreshToken, one.userId), false, 'a fresh session')
  t.equal(await b.sessionEnded(one.refreshToken, two.userId), true, "another user's refresh token")
  t.equal(await b.sessionEnded('not.a.token', one.userId), true, 'no token')
  // The ticket of a terminal opened an hour ago holds a refresh token Nakama's sliding refresh has replaced since.
  const lapsed = signToken({ ...claims(one.refreshToken), exp: Math.floor(Date.now() / 1000) - 60 }, 'fake-refresh-encryption-key')
  t.equal(await b.sessionActive(lapsed, one.userId), false, 'that token signs no one in')
  t.equal(await b.sessionEnded(lapsed, one.userId), false, 'but its session lives on')
  const refreshed = await b.refresh(one.refreshToken)
  await b.logout(refreshed)
  t.equal(await b.sessionEnded(lapsed, one.userId), true, 'the logout of a later token of the session (same tid) ends it')
  t.equal(await b.sessionEnded(one.refreshToken, one.userId), true, 'for every token of it')
  t.equal(await b.sessionEnded(two.refreshToken, two.userId), false, 'and no other session')
})

t.test('a rename past the bucket is 429 with the wait the module computed as Retry-After, not a token second', async (t) => {
  const b = backend()
  const s = await b.register(name('wait'), 'password123')
  const now = Date.now()
  for (const i of [1, 2, 3]) await b.renameUser(s.userId, name(`wait${i}`), RENAME_RULE, now)
  const err = await b.renameUser(s.userId, name('wait4'), RENAME_RULE, now).then(() => null, (e: unknown) => e)
  t.match(err, { status: 429, code: 'RATE_LIMITED' })
  // 3 an hour: the next token is 20 minutes away.
  t.equal((err as HttpError).headers?.['retry-after'], '1200', 'Retry-After: 1200 seconds')
  t.equal((await b.getAccount(s.userId))?.username, name('wait3'), 'the refused rename changed nothing')
})

t.test("a sign-in answered 200 with tokens Nakama never issues is 503 BACKEND_UNAVAILABLE, and signs no one in", async (t) => {
  const b = backend()
  const real = await b.register(name('jwt'), 'password123')
  const c = claims(real.token)
  const r = claims(real.refreshToken)
  const without = (o: object, key: string) => Object.fromEntries(Object.entries(o).filter(([k]) => k !== key))
  const jwt = (o: Record<string, unknown>) => signToken(o as never, 'fake-encryption-key')
  const answers: Array<[string, { token: string; refresh_token: string }]> = [
    ['neither token a JWT', { token: 'not-a-jwt', refresh_token: 'not.a.jwt' }],
    ['a refresh token that is not a JWT', { token: real.token, refresh_token: 'not.a.jwt' }],
    ['tokens without exp', { token: jwt(without(c, 'exp')), refresh_token: jwt(without(r, 'exp')) }],
    ['tokens without tid', { token: jwt(without(c, 'tid')), refresh_token: jwt(without(r, 'tid')) }],
  ]
  for (const [label, session] of answers) {
    const answer = (res: import('node:http').ServerResponse) => void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(session))
    interceptNext(t, '/v2/account/authenticate/email', answer)
    await expectRejection(t, b.login(name('jwt'), 'password123'), 503, 'BACKEND_UNAVAILABLE', `login: ${label}`)
    interceptNext(t, '/v2/account/authenticate/custom', answer)
    await expectRejection(t, b.authenticateGuest(), 503, 'BACKEND_UNAVAILABLE', `guest: ${label}`)
  }
  fake.intercept = null
  t.ok(await b.login(name('jwt'), 'password123'), 'signs in once Nakama answers as itself')
})

t.test('a rename for an account Nakama no longer has ends the session: 401 NO_SESSION', async (t) => {
  const b = backend()
  await expectRejection(t, b.renameUser('00000000-0000-4000-8000-0000000000aa', name('ghost'), RENAME_RULE, Date.now()), 401, 'NO_SESSION')
  t.equal(fake.state.byUsername(name('ghost')), undefined, 'no one got the name')
})

t.test('an incr past 2^53-1 is 400 VALIDATION_FAILED naming the field, and the record stays', async (t) => {
  const b = backend()
  const board = `inc_${tag}`
  await b.syncLeaderboards([{ id: board, operator: 'incr', sortOrder: 'desc', resetSchedule: null, authoritative: true }])
  const s = await b.register(name('inc'), 'password123')
  const write = (score: number, subscore: number) => b.writeRecord({ leaderboardId: board, ownerId: s.userId, username: s.username, score, subscore }, Date.now())
  const max = Number.MAX_SAFE_INTEGER
  t.match(await write(max - 1, max - 1), { score: max - 1, subscore: max - 1 })
  for (const [field, score, subscore] of [['score', 2, 0], ['subscore', 0, 2]] as const) {
    const err = await write(score, subscore).then(() => null, (e: unknown) => e)
    t.match(err, { status: 400, code: 'VALIDATION_FAILED', details: [{ path: `/${field}` }] }, `${field} past 2^53-1`)
  }
  const page = await b.listRecords({ leaderboardId: board, limit: 5 }, Date.now())
  t.same(page.records.map((r) => [r.score, r.subscore]), [[max - 1, max - 1]], 'nothing was added')
  t.match(await write(1, 1), { score: max, subscore: max }, 'up to 2^53-1 is taken')
})

t.test('module answers of a shape the module never gives are 503 BACKEND_UNAVAILABLE, never taken at their word', async (t) => {
  const b = backend()
  const s = await b.register(name('shape'), 'password123')
  const board = `shape_${tag}`
  await b.syncLeaderboards([{ id: board, operator: 'best', sortOrder: 'desc', resetSchedule: null, authoritative: true }])
  const record = { leaderboard_id: board, owner_id: s.userId, username: s.username, score: 1, subscore: 0, rank: 1 }
  const cases: Array<[string, string, unknown, () => Promise<unknown>]> = [
    ['a launch answered not recorded', 'playfield_record_launch', { recorded: false }, () => b.recordLaunch({ sessionId: `sh-${tag}`, gameId: 'g', userId: s.userId, time: Date.now() })],
    ['a revocation answered not stored', 'playfield_revoke_session', { revoked: false }, () => b.logout(s)],
    ['a revocation check answered with a string', 'playfield_session_revoked', { revoked: 'false' }, () => b.sessionActive(s.refreshToken, s.userId)],
    ['a rate limit without its wait', 'playfield_rename', { error: 'RATE_LIMITED' }, () => b.renameUser(s.userId, name('shape2'), RENAME_RULE, Date.now())],
    ['a rename refused for an unknown reason', 'playfield_rename', { error: 'SOMETHING_ELSE' }, () => b.renameUser(s.userId, name('shape3'), RENAME_RULE, Date.now())],
    ['a record whose score is a string', 'playfield_write_record', { record: { ...record, score: '1' } }, () => b.writeRecord({ leaderboardId: board, ownerId: s.userId, username: s.username, score: 1, subscore: 0 }, Date.now())],
    ['a page whose cursor is a number', 'playfield_list_records', { records: [record], nextCursor: 5, ownRecord: null }, () => b.listRecords({ leaderboardId: board, limit: 5 }, Date.now())],
    ['an account whose roles are a string', 'playfield_get_account', { account: { id: s.userId, username: s.username, roles: 'admin' } }, () => b.getAccount(s.userId)],
    ['privileged accounts without names', 'playfield_list_privileged', { accounts: [{ id: s.userId }] }, () => b.listPrivileged()],
    ['a window whose times are a string', 'playfield_event_window', { times: '1' }, () => b.eventWindow(`signin:${tag}`, Date.now(), 60_000)],
  ]
  for (const [label, rpc, body, call] of cases) {
    const answer = (res: import('node:http').ServerResponse) => void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body))
    interceptNext(t, `/v2/rpc/${rpc}`, answer, 2)
    await expectRejection(t, call(), 503, 'BACKEND_UNAVAILABLE', label)
    fake.intercept = null
  }
  t.equal(await b.sessionActive(s.refreshToken, s.userId), true, 'the session was never ended by an answer of the wrong shape')
})

t.test('boards synced while Nakama is down are created once it is back; a newer sync (a reload) replaces the pending one', async (t) => {
  const b = backend()
  const old = `old_${tag}`
  const kept = `kept_${tag}`
  const board = (id: string) => ({ id, operator: 'best' as const, sortOrder: 'desc' as const, resetSchedule: null, authoritative: true })
  await fake.stop()
  t.teardown(() => fake.start().catch(() => undefined))
  await b.syncLeaderboards([board(old)])
  await b.syncLeaderboards([board(kept)])
  await fake.start()
  for (let i = 0; i < 200 && !fake.state.leaderboards.boards.has(kept); i++) await sleep(50)
  t.ok(fake.state.leaderboards.boards.has(kept), 'the board of the newer catalogue is created in the background')
  t.notOk(fake.state.leaderboards.boards.has(old), 'the board of the replaced catalogue is not')
})

t.test("logout ends the session token in Nakama's own cache through the module, even when the REST logout after it is lost", async (t) => {
  const b = backend()
  const s = await b.register(name('lost'), 'password123')
  const account = () => fetch(`${fake.url}/v2/account`, { headers: { authorization: `Bearer ${s.token}` } })
  t.equal((await account()).status, 200, 'the session token works in Nakama before')
  interceptNext(t, '/v2/session/logout', 'drop')
  await b.logout(s)
  fake.intercept = null
  t.equal((await account()).status, 401, 'Nakama refuses the session token after')
  t.equal(await b.sessionActive(s.refreshToken, s.userId), false, 'and the platform the session')
})

t.test('the cache of session answers stays bounded: past its cap (50,000) it starts over, and a logged-out session is asked of Nakama again', async (t) => {
  // Found by a soak audit: a logout was remembered until its session expired (30 days, say), and
  // past 50,000 only lapsed answers were forgotten, so the map grew and each new answer scanned it.
  const b = backend()
  const out = await b.authenticateGuest()
  await b.logout(out)
  const { uid, tid, exp } = claims(out.refreshToken)
  const cap = 1_000
  const revocations = new Revocations(new NakamaClient(loadPlatformConfig({ ...nakamaEnv(fake), DATA_DIR: '/tmp' }).nakama!), cap)
  const asked = () => calls('POST /v2/rpc/playfield_session_revoked')
  // Answers given "10 days from now" do not lapse during the test, as logouts of long sessions would not.
  const later = Date.now() + 10 * 86_400_000
  const before = asked()
  t.equal(await revocations.isRevoked(uid, tid, exp, later), true)
  t.equal(await revocations.isRevoked(uid, tid, exp, later), true)
  t.equal(asked(), before + 1, 'the second answer came from the cache')
  // The other sessions are logged out too: a "still active" answer is trusted for a second only,
  // so on a slow machine the first of them would lapse before the cap is passed and be swept.
  interceptNext(t, '/v2/rpc/playfield_session_revoked', (res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"revoked":true}'), Infinity)
  for (let i = 0; i < cap; i += 100) {
    await Promise.all(Array.from({ length: 100 }, (_, j) => revocations.isRevoked(uid, `other-${i + j}`, exp, later)))
  }
  t.equal(asked(), before + cap + 1)
  t.equal(await revocations.isRevoked(uid, tid, exp, later), true, 'still logged out')
  t.equal(asked(), before + cap + 2, 'asked of Nakama again: the cache had started over')
})
