import t from 'tap'
import { readFileSync } from 'node:fs'
import { parse } from 'acorn'
import { resetTimes } from '../lib/catalogue/schedule.js'
import { take, RENAME_RULE, type Bucket, type Rule } from '../lib/limiter.js'
import { startFakeNakama, type FakeNakama } from './fake-nakama/server.js'
import { loadRuntime, MODULE_PATH } from './fake-nakama/runtime.js'
import { FakeState, SYSTEM_USER } from './fake-nakama/state.js'

// The runtime module (nakama/modules/playfield.js) run by the fake Nakama, called over HTTP as the
// platform calls it: POST /v2/rpc/<id>?unwrap with the runtime HTTP key.

const source = readFileSync(MODULE_PATH, 'utf8')

async function rpc(fake: FakeNakama, id: string, payload: unknown): Promise<any> {
  const res = await fetch(`${fake.url}/v2/rpc/${id}?http_key=${fake.httpKey}&unwrap`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(payload),
  })
  const text = await res.text()
  if (res.status !== 200) throw new Error(`${id}: ${res.status} ${text}`)
  return JSON.parse(text)
}

async function authCustom(fake: FakeNakama, id: string, username?: string): Promise<{ token: string; uid: string }> {
  const q = new URLSearchParams({ create: 'true', ...(username ? { username } : {}) })
  const res = await fetch(`${fake.url}/v2/account/authenticate/custom?${q}`, {
    method: 'POST', headers: { authorization: `Basic ${Buffer.from(`${fake.serverKey}:`).toString('base64')}` }, body: JSON.stringify({ id }),
  })
  const body = await res.json() as { token: string }
  return { token: body.token, uid: JSON.parse(Buffer.from(body.token.split('.')[1]!, 'base64url').toString()).uid }
}

t.test('the module is one ES5 script whose RPCs are top-level named functions', async (t) => {
  const ast = parse(source, { ecmaVersion: 5, sourceType: 'script' }) as any
  const top = new Set(ast.body.filter((n: any) => n.type === 'FunctionDeclaration').map((n: any) => n.id.name))
  t.ok(top.has('InitModule'), 'top-level InitModule')
  t.notMatch(source, /\b(require\s*\(|import\s|export\s)/, 'no require, import or export')
  const init = ast.body.find((n: any) => n.type === 'FunctionDeclaration' && n.id.name === 'InitModule')
  const registered = init.body.body
    .filter((s: any) => s.expression?.callee?.property?.name === 'registerRpc')
    .map((s: any) => s.expression.arguments[1])
  t.equal(registered.length, 11)
  for (const arg of registered) t.ok(arg.type === 'Identifier' && top.has(arg.name), `${arg.name ?? arg.type} is a top-level function`)
  const hooks = init.body.body.filter((s: any) => /^registerBefore/.test(s.expression?.callee?.property?.name ?? ''))
  t.same(hooks.map((s: any) => [s.expression.callee.property.name, s.expression.arguments[0].type, top.has(s.expression.arguments[0].name)]),
    [['registerBeforeUpdateAccount', 'Identifier', true]], 'the hook is a top-level function too')
})

t.test('the fake refuses a module that registers an inline function, as Nakama does', async (t) => {
  const state = new FakeState({ iat: true, maxLimit: 1000, ranksFlag: true, wrappedRenameError: true }, Date.now)
  const inline = 'function InitModule(ctx, logger, nk, initializer) { initializer.registerRpc("x", function () { return "" }) }'
  t.throws(() => loadRuntime(state, inline), /top-level named function/)
  t.throws(() => loadRuntime(state, 'var x = 1'), /InitModule function not found/)
})

t.test("the module's token bucket is lib/limiter.ts's take, case for case", async (t) => {
  const state = new FakeState({ iat: true, maxLimit: 1000, ranksFlag: true, wrappedRenameError: true }, Date.now)
  const { scope } = loadRuntime(state)
  const fast: Rule = { capacity: 2, refill: 1, intervalMs: 1000 }
  const cases: Array<[string, Bucket | undefined, Rule, number]> = [
    ['missing bucket is full', undefined, RENAME_RULE, 1_000],
    ['last token', { tokens: 1, updatedAt: 0 }, RENAME_RULE, 0],
    ['empty, wait for one token', { tokens: 0, updatedAt: 0 }, RENAME_RULE, 0],
    ['fraction refilled', { tokens: 0.5, updatedAt: 0 }, RENAME_RULE, 600_000],
    ['refill caps at capacity', { tokens: 0, updatedAt: 0 }, fast, 1_000_000],
    ['clock behind the bucket', { tokens: 0.2, updatedAt: 5_000 }, fast, 1_000],
    ['almost one token', { tokens: 0.999, updatedAt: 0 }, RENAME_RULE, 1],
  ]
  for (const [name, bucket, rule, now] of cases) {
    const fromModule = JSON.parse(JSON.stringify(scope.bucketTake(bucket, rule, now)))
    t.same(fromModule, take(bucket, rule, now), name)
  }
})

t.test('RPC calls: HTTP key required, unwrap and wrapped forms, unknown ids', async (t) => {
  const fake = await startFakeNakama()
  t.teardown(() => fake.close())
  const url = `${fake.url}/v2/rpc/playfield_list_privileged`
  let res = await fetch(`${url}?unwrap`, { method: 'POST', body: '{}' })
  t.equal(res.status, 401)
  t.same(await res.json(), { code: 16, error: 'Auth token or HTTP key required', message: 'Auth token or HTTP key required' })
  res = await fetch(`${url}?http_key=wrong&unwrap`, { method: 'POST', body: '{}' })
  t.equal(res.status, 401)
  t.same(await res.json(), { code: 16, error: 'HTTP key invalid', message: 'HTTP key invalid' })
  res = await fetch(`${url}?unwrap`, { method: 'POST', body: '{}', headers: { authorization: `Basic ${Buffer.from(`${fake.httpKey}:`).toString('base64')}`, 'content-type': 'application/json' } })
  t.equal(res.status, 200)
  t.equal(res.headers.get('content-type'), 'application/json', 'unwrap copies the request content type')
  t.same(await res.json(), { accounts: [] })
  res = await fetch(`${url}?http_key=${fake.httpKey}`, { method: 'POST', body: '{}' })
  t.equal(res.status, 400, 'without unwrap the body must be a JSON string')
  res = await fetch(`${url}?http_key=${fake.httpKey}`, { method: 'POST', body: JSON.stringify('{}') })
  t.same(await res.json(), { payload: JSON.stringify({ accounts: [] }) })
  res = await fetch(`${fake.url}/v2/rpc/PLAYFIELD_NOPE?http_key=${fake.httpKey}&unwrap`, { method: 'POST', body: '{}' })
  t.equal(res.status, 404)
  t.same(await res.json(), { code: 5, error: 'RPC function not found', message: 'RPC function not found' })
})

t.test('storage writes with a stale version are rejected', async (t) => {
  const fake = await startFakeNakama()
  t.teardown(() => fake.close())
  const nk = fake.runtime.nk
  const user = SYSTEM_USER
  const [first] = nk.storageWrite([{ collection: 'c', key: 'k', userId: user, value: { n: 1 }, version: '*' }])
  t.throws(() => nk.storageWrite([{ collection: 'c', key: 'k', userId: user, value: { n: 2 }, version: '*' }]), /version check failed/, "'*' fails when the object exists")
  nk.storageWrite([{ collection: 'c', key: 'k', userId: user, value: { n: 2 }, version: first!.version }])
  t.throws(() => nk.storageWrite([{ collection: 'c', key: 'k', userId: user, value: { n: 3 }, version: first!.version }]), /version check failed/, 'stale version fails')
  t.same(nk.storageRead([{ collection: 'c', key: 'k', userId: user }])[0]!.value, { n: 2 })
})

t.test('rename: three per hour, taken names spend nothing, a lost version race is retried', async (t) => {
  const fake = await startFakeNakama()
  t.teardown(() => fake.close())
  const alice = await authCustom(fake, 'custom-alice-0001', 'alice')
  await authCustom(fake, 'custom-bob-00001', 'bob')
  const rule = RENAME_RULE
  const now = 1_800_000_000_000
  t.same(await rpc(fake, 'playfield_rename', { userId: alice.uid, username: 'bob', rule, now }), { error: 'USERNAME_TAKEN' })
  t.same(await rpc(fake, 'playfield_rename', { userId: alice.uid, username: 'Bob', rule, now }),
    { account: { id: alice.uid, username: 'Bob', roles: [] } }, 'names are case-exact on Nakama')

  // Another instance writes the bucket between this call's read and write: the module re-reads.
  const nk = fake.runtime.nk
  const read = nk.storageRead
  let raced = false
  nk.storageRead = (reads) => {
    const found = read(reads)
    if (!raced && reads[0]!.collection === 'playfield_rename_buckets') {
      raced = true
      nk.storageWrite([{ collection: 'playfield_rename_buckets', key: alice.uid, value: { tokens: 1, updatedAt: now }, version: found[0]?.version ?? '*' }])
    }
    return found
  }
  t.same(await rpc(fake, 'playfield_rename', { userId: alice.uid, username: 'alice2', rule, now }), { account: { id: alice.uid, username: 'alice2', roles: [] } })
  nk.storageRead = read
  t.ok(raced)
  t.same(fake.state.read('playfield_rename_buckets', alice.uid, SYSTEM_USER)!.value, JSON.stringify({ tokens: 0, updatedAt: now }), 'the retry took from the raced bucket')
  const limited = await rpc(fake, 'playfield_rename', { userId: alice.uid, username: 'alice3', rule, now: now + 1000 })
  t.same(limited, { error: 'RATE_LIMITED', waitMs: Math.ceil((1 - 1000 * 3 / 3_600_000) * 3_600_000 / 3) })
  t.equal(fake.state.users.get(alice.uid)!.username, 'alice2', 'a refused rename changes nothing')
})

t.test('a rename refused by Nakama gives its token back', async (t) => {
  const fake = await startFakeNakama()
  t.teardown(() => fake.close())
  const alice = await authCustom(fake, 'custom-alice-0001', 'alice')
  const now = 1_800_000_000_000
  const update = fake.runtime.nk.accountUpdateId
  fake.runtime.nk.accountUpdateId = () => { throw new Error('Username is already in use.') }
  t.same(await rpc(fake, 'playfield_rename', { userId: alice.uid, username: 'racer', rule: RENAME_RULE, now }), { error: 'USERNAME_TAKEN' })
  fake.runtime.nk.accountUpdateId = update
  t.same(fake.state.read('playfield_rename_buckets', alice.uid, SYSTEM_USER)!.value, JSON.stringify({ tokens: 3, updatedAt: now }))
})

t.test('roles: grant, revoke, list by exact username', async (t) => {
  const fake = await startFakeNakama()
  t.teardown(() => fake.close())
  const alice = await authCustom(fake, 'custom-alice-0001', 'alice')
  const bob = await authCustom(fake, 'custom-bob-00001', 'bob')
  t.same(await rpc(fake, 'playfield_set_role', { username: 'Alice', role: 'developer', grant: true }), { error: 'NOT_FOUND' })
  t.same(await rpc(fake, 'playfield_set_role', { username: 'alice', role: 'developer', grant: true }), { account: { id: alice.uid, username: 'alice', roles: ['developer'] } })
  await rpc(fake, 'playfield_set_role', { username: 'alice', role: 'admin', grant: true })
  await rpc(fake, 'playfield_set_role', { username: 'bob', role: 'developer', grant: true })
  t.same(await rpc(fake, 'playfield_get_account', { userId: alice.uid }), { account: { id: alice.uid, username: 'alice', roles: ['admin', 'developer'] } })
  t.same(await rpc(fake, 'playfield_set_role', { username: 'bob', role: 'developer', grant: false }), { account: { id: bob.uid, username: 'bob', roles: [] } })
  t.same(await rpc(fake, 'playfield_list_privileged', {}), { accounts: [{ id: alice.uid, username: 'alice', roles: ['admin', 'developer'] }] })
  t.same(await rpc(fake, 'playfield_get_account', { userId: '00000000-0000-4000-8000-000000000000' }), { account: null })
  t.same(await rpc(fake, 'playfield_get_account', { userId: 'not-a-uuid' }), { account: null })
})

t.test("roles live in the system user's storage: an object a user creates in their own namespace grants nothing", async (t) => {
  const fake = await startFakeNakama()
  t.teardown(() => fake.close())
  const nk = fake.runtime.nk
  const mallory = await authCustom(fake, 'custom-mallory-01', 'mallory')
  const carol = await authCustom(fake, 'custom-carol-0001', 'carol')
  // What PUT /v2/storage with mallory's own session does on a real Nakama: an object that does not
  // exist yet is created in the caller's namespace, whatever permissions the module would set.
  for (const [collection, key] of [['playfield_roles', 'roles'], ['playfield_roles', mallory.uid], ['playfield_roles', 'index']]) {
    nk.storageWrite([{ collection: collection!, key: key!, userId: mallory.uid, value: { roles: ['admin'], userIds: [mallory.uid] }, version: '*' }])
  }
  t.same(await rpc(fake, 'playfield_get_account', { userId: mallory.uid }), { account: { id: mallory.uid, username: 'mallory', roles: [] } })
  t.same(await rpc(fake, 'playfield_list_privileged', {}), { accounts: [] })
  await rpc(fake, 'playfield_set_role', { username: 'carol', role: 'developer', grant: true })
  t.same(JSON.parse(fake.state.read('playfield_roles', carol.uid, SYSTEM_USER)!.value), { roles: ['developer'] }, 'a grant is written system-owned')
  t.equal(fake.state.read('playfield_roles', 'roles', carol.uid), undefined, 'and not in the user\'s namespace')

  // Grants an older module wrote in users' namespaces (listed in the system-owned index) move at
  // start; a user's own object that the index does not list is left unread.
  const dave = await authCustom(fake, 'custom-dave-00001', 'dave')
  const index = nk.storageRead([{ collection: 'playfield_roles', key: 'index', userId: SYSTEM_USER }])[0]!
  nk.storageWrite([
    { collection: 'playfield_roles', key: 'roles', userId: dave.uid, value: { roles: ['admin'] }, version: '*' },
    { collection: 'playfield_roles', key: 'index', userId: SYSTEM_USER, value: { userIds: [carol.uid, dave.uid] }, version: index.version },
  ])
  t.same((await rpc(fake, 'playfield_get_account', { userId: dave.uid })).account.roles, [], 'not read where it was')
  loadRuntime(fake.state)
  t.same((await rpc(fake, 'playfield_get_account', { userId: dave.uid })).account.roles, ['admin'], 'moved at the next start')
  t.equal(fake.state.read('playfield_roles', 'roles', dave.uid), undefined, 'the old object is gone')
  t.same((await rpc(fake, 'playfield_get_account', { userId: mallory.uid })).account.roles, [], "mallory's own object was not moved")
  t.same((await rpc(fake, 'playfield_list_privileged', {})).accounts.map((a: { username: string }) => a.username), ['carol', 'dave'])
})

t.test('launches, logouts and rename buckets are system-owned too; an older logout record still counts', async (t) => {
  const fake = await startFakeNakama()
  t.teardown(() => fake.close())
  const nk = fake.runtime.nk
  const erin = await authCustom(fake, 'custom-erin-00001', 'erin')
  const frank = await authCustom(fake, 'custom-frank-0001', 'frank')
  await rpc(fake, 'playfield_record_launch', { sessionId: 'launch-1', userId: erin.uid, gameId: 'g', time: 5 })
  t.same(JSON.parse(fake.state.read('playfield_launches', 'launch-1', SYSTEM_USER)!.value), { userId: erin.uid, gameId: 'g', time: 5 })
  await rpc(fake, 'playfield_revoke_session', { userId: erin.uid, tid: 'tid-1', exp: 9 })
  t.same(await rpc(fake, 'playfield_session_revoked', { userId: erin.uid, tid: 'tid-1' }), { revoked: true })
  t.same(await rpc(fake, 'playfield_session_revoked', { userId: frank.uid, tid: 'tid-1' }), { revoked: false }, "another user's session id")
  nk.storageWrite([{ collection: 'playfield_revoked', key: 'tid-2', userId: frank.uid, value: { exp: 9 }, version: '*' }])
  t.same(await rpc(fake, 'playfield_session_revoked', { userId: frank.uid, tid: 'tid-2' }), { revoked: true }, "a record in the user's namespace, as older modules wrote it")
  await rpc(fake, 'playfield_rename', { userId: erin.uid, username: 'erin2', rule: RENAME_RULE, now: 1000 })
  t.ok(fake.state.read('playfield_rename_buckets', erin.uid, SYSTEM_USER), 'the rename bucket')
})

t.test('a listed record whose username Nakama gives as null is listed with an empty one, not its index', async (t) => {
  const state = new FakeState({ iat: true, maxLimit: 1000, ranksFlag: true, wrappedRenameError: true }, Date.now)
  const { scope } = loadRuntime(state)
  const record = (ownerId: string, score: number, username: string | null) => ({ leaderboardId: 'b', ownerId, username, score, subscore: 0, rank: 0 })
  const nk = { leaderboardRecordsList: () => ({ records: [record('a', 30, 'alice'), record('b', 20, null)], ownerRecords: [], nextCursor: '' }), usersGetId: () => [] }
  const listed = JSON.parse((scope.rpcListRecords as (...args: unknown[]) => string)({}, {}, nk, JSON.stringify({ leaderboardId: 'b', limit: 20 })))
  t.same(listed.records.map((r: { username: unknown }) => r.username), ['alice', ''])
})

t.test('leaderboards: created once with ranks, written authoritatively, listed with cursors', async (t) => {
  const fake = await startFakeNakama()
  t.teardown(() => fake.close())
  const boards = [
    { id: 'hi', operator: 'best', sortOrder: 'desc', resetSchedule: null, authoritative: true },
    { id: 'lap', operator: 'best', sortOrder: 'asc', resetSchedule: '0 0 * * 1', authoritative: false },
    { id: 'wins', operator: 'incr', sortOrder: 'desc', resetSchedule: null, authoritative: false },
  ]
  t.same(await rpc(fake, 'playfield_sync_leaderboards', { boards }), { created: ['hi', 'lap', 'wins'], differing: [], unchecked: [] })
  t.same(fake.state.leaderboards.boards.get('hi')!.enableRanks, true)
  const changed = [{ ...boards[0], sortOrder: 'asc' }, boards[1], boards[2]]
  t.same(await rpc(fake, 'playfield_sync_leaderboards', { boards: changed }), { created: [], differing: ['hi'], unchecked: [] }, 'an existing board keeps its settings and is reported')

  const users = await Promise.all(['u1', 'u2', 'u3'].map((n) => authCustom(fake, `custom-${n}-000`, n)))
  const [a, b, c] = users as [typeof users[0], typeof users[0], typeof users[0]]
  const operators: Record<string, string> = { hi: 'best', lap: 'best', wins: 'incr', nope: 'best' }
  // The payload's name is a stale one (a session's): the record takes the account's name now.
  const write = (owner: typeof a, leaderboardId: string, score: number, subscore = 0, metadata?: string) =>
    rpc(fake, 'playfield_write_record', { leaderboardId, ownerId: owner.uid, username: `stale-${owner.uid.slice(0, 4)}`, score, subscore, metadata, operator: operators[leaderboardId] })
  t.same(await write(a, 'hi', 100, 5, '{"lvl":1}'), { record: { leaderboard_id: 'hi', owner_id: a.uid, username: 'u1', score: 100, subscore: 5, rank: 1 } }, 'recorded under the account\'s name')
  t.equal(fake.state.leaderboards.list('hi', [a.uid], 1, '', 0, Date.now()).records[0]!.username, 'u1', 'stored under it too')
  t.same((await write(a, 'hi', 90, 9)).record.score, 100, 'best keeps the better score')
  t.same((await write(a, 'hi', 90, 9)).record.subscore, 9, '... and independently the better subscore')
  await write(a, 'hi', 50, 1, '{"lvl":2}')
  t.equal(fake.state.leaderboards.list('hi', [a.uid], 1, '', 0, Date.now()).records[0]!.metadata, '{"lvl": 1}', 'a write that changes nothing keeps the metadata')
  await write(b, 'hi', 100, 9)
  await write(c, 'hi', 300, 0)
  const top = await rpc(fake, 'playfield_list_records', { leaderboardId: 'hi', limit: 2, ownerId: a.uid })
  t.same(top.records.map((r: any) => [r.score, r.rank]), [[300, 1], [100, 2]])
  t.type(top.nextCursor, 'string')
  const ties = [a.uid, b.uid].sort().reverse()
  t.equal(top.records[1].owner_id, ties[0], 'ties on score and subscore order by owner id, descending')
  t.same(top.ownRecord.rank, a.uid === ties[0] ? 2 : 3)
  const rest = await rpc(fake, 'playfield_list_records', { leaderboardId: 'hi', limit: 2, cursor: top.nextCursor })
  t.same(rest.records.map((r: any) => [r.owner_id, r.rank]), [[ties[1], 3]])
  t.equal(rest.nextCursor, null)
  t.same(rest.ownRecord, null)
  t.same(await rpc(fake, 'playfield_list_records', { leaderboardId: 'lap', limit: 2, cursor: top.nextCursor }), { error: 'INVALID_CURSOR' })
  t.same(await rpc(fake, 'playfield_list_records', { leaderboardId: 'nope', limit: 2 }), { error: 'LEADERBOARD_NOT_FOUND' })
  t.same(await write(a, 'nope', 1), { error: 'LEADERBOARD_NOT_FOUND' })

  t.same((await write(a, 'wins', 2, 1)).record.score, 2)
  t.same((await write(a, 'wins', 3, 1)).record, { leaderboard_id: 'wins', owner_id: a.uid, username: 'u1', score: 5, subscore: 2, rank: 1 })
  t.same(await write(a, 'wins', Number.MAX_SAFE_INTEGER - 4, 0), { error: 'SCORE_OVERFLOW', field: 'score' }, 'an increment past 2^53-1 is refused')
  t.same((await write(a, 'wins', Number.MAX_SAFE_INTEGER - 5, 0)).record.score, Number.MAX_SAFE_INTEGER, 'up to 2^53-1 is exact')
  t.same((await write(b, 'wins', 1, Number.MAX_SAFE_INTEGER)).record.subscore, Number.MAX_SAFE_INTEGER)
  t.same(await write(b, 'wins', 1, 1), { error: 'SCORE_OVERFLOW', field: 'subscore' }, 'the subscore is named when it is the one')
  await write(a, 'lap', 70)
  t.same((await write(a, 'lap', 65)).record.score, 65, 'best on an ascending board keeps the lower score')

  // Runtimes that leave the rank out of the written record (and wrap the username): read from the rank cache.
  const recordWrite = fake.runtime.nk.leaderboardRecordWrite
  fake.runtime.nk.leaderboardRecordWrite = (...args: Parameters<typeof recordWrite>) => {
    const { rank, username, ...rest } = recordWrite(...args)
    void rank
    return { ...rest, username: { value: username } } as unknown as ReturnType<typeof recordWrite>
  }
  t.same(await write(b, 'hi', 150), { record: { leaderboard_id: 'hi', owner_id: b.uid, username: 'u2', score: 150, subscore: 9, rank: 2 } })
  fake.runtime.nk.leaderboardRecordWrite = recordWrite

  // A client cannot bypass the platform on an authoritative board (nakama-api.md §1.6).
  const res = await fetch(`${fake.url}/v2/leaderboard/hi`, { method: 'POST', headers: { authorization: `Bearer ${a.token}` }, body: JSON.stringify({ score: '999' }) })
  t.equal(res.status, 403)
  t.same(await res.json(), { code: 7, message: 'Leaderboard only allows authoritative score submissions.' })
})

t.test('REST leaderboard list: int64 strings, omitted zeros, limit defaults to 1 without limit', async (t) => {
  const fake = await startFakeNakama()
  t.teardown(() => fake.close())
  await rpc(fake, 'playfield_sync_leaderboards', { boards: [{ id: 'open', operator: 'best', sortOrder: 'desc', resetSchedule: null, authoritative: false }] })
  const a = await authCustom(fake, 'custom-a-00001', 'a')
  const b = await authCustom(fake, 'custom-b-00001', 'b')
  const post = (u: typeof a, body: unknown) => fetch(`${fake.url}/v2/leaderboard/open`, { method: 'POST', headers: { authorization: `Bearer ${u.token}` }, body: JSON.stringify(body) })
  let res = await post(a, { score: 1.5 })
  t.equal(res.status, 400)
  res = await post(a, { score: '100', subscore: 9, metadata: '{"lvl": 2}' })
  const rec = await res.json() as Record<string, unknown>
  t.equal(rec.score, '100')
  t.equal(rec.rank, '1')
  await post(b, {})
  res = await fetch(`${fake.url}/v2/leaderboard/open`, { headers: { authorization: `Bearer ${a.token}` } })
  const one = await res.json() as { records: Array<Record<string, unknown>>; next_cursor: string; rank_count: string }
  t.equal(one.records.length, 1, 'no limit: one record')
  t.equal(one.rank_count, '2')
  res = await fetch(`${fake.url}/v2/leaderboard/open?limit=10&owner_ids=${b.uid}`, { headers: { authorization: `Bearer ${a.token}` } })
  const all = await res.json() as { records: Array<Record<string, unknown>>; owner_records: Array<Record<string, unknown>> }
  t.notOk('score' in all.records[1]!, 'a zero score has no key')
  t.equal(all.owner_records[0]!.rank, '2')
  res = await fetch(`${fake.url}/v2/leaderboard/open?limit=1001`, { headers: { authorization: `Bearer ${a.token}` } })
  t.same(await res.json(), { code: 3, message: 'Invalid limit - limit must be between 1 and 1000.' })
})

t.test('event windows: recorded times younger than the window, the latest kept, shared by every caller', async (t) => {
  const fake = await startFakeNakama()
  t.teardown(() => fake.close())
  const at = 1_800_000_000_000
  const window = (now: number, record: boolean) => rpc(fake, 'playfield_event_window', { key: 'signin:203.0.113.5', now, windowMs: 60_000, keep: 3, record })
  t.same(await window(at, false), { times: [] })
  for (let i = 0; i < 5; i++) await window(at + i * 1000, true)
  t.same(await window(at + 5000, false), { times: [at + 2000, at + 3000, at + 4000] }, 'the latest 3')
  t.same(await window(at + 62_500, false), { times: [at + 3000, at + 4000] }, 'older than the window: gone')
  t.same(await window(at + 62_500, true), { times: [at + 3000, at + 4000, at + 62_500] })
  t.same(await window(at - 3_600_000, true), { times: [at - 3_600_000] }, 'the clock stepped back an hour: times ahead by more than the window are dropped')
  t.same(await window(at - 3_600_000 - 60_000, false), { times: [at - 3_600_000] }, 'ahead by a minute: kept')
  t.same(await rpc(fake, 'playfield_event_window', { key: 'signin:198.51.100.1', now: at, windowMs: 60_000, keep: 3, record: false }), { times: [] }, 'another key is its own')
  const stored = (key: string) => [...fake.state.storage.keys()].some((k) => k.includes(key))
  t.ok(stored('signin:203.0.113.5'))
  t.same(await window(at + 200_000, false), { times: [] })
  t.notOk(stored('signin:203.0.113.5'), 'a window read empty is deleted')
  // Writers at once lose nothing: the storage version check retries.
  await Promise.all(Array.from({ length: 6 }, (_, i) => rpc(fake, 'playfield_event_window', { key: 'signin:198.51.100.2', now: at + i, windowMs: 60_000, keep: 10, record: true })))
  t.equal((await rpc(fake, 'playfield_event_window', { key: 'signin:198.51.100.2', now: at + 10, windowMs: 60_000, keep: 10, record: false })).times.length, 6)
})

/** Every RPC with a payload that would do harm if a user could send it. */
function attacks(victim: { uid: string }, self: { uid: string }): Array<[string, unknown]> {
  const rule = { capacity: 1000, refill: 1000, intervalMs: 1 }
  return [
    ['playfield_sync_leaderboards', { boards: [{ id: 'planted', operator: 'set', sortOrder: 'desc', resetSchedule: null, authoritative: false }] }],
    ['playfield_write_record', { leaderboardId: 'hi', ownerId: self.uid, username: 'x', score: 999999, subscore: 0, operator: 'best' }],
    ['playfield_list_records', { leaderboardId: 'hi', limit: 10 }],
    ['playfield_get_account', { userId: victim.uid }],
    ['playfield_rename', { userId: victim.uid, username: 'pwned', rule, now: Date.now() }],
    ['playfield_event_window', { key: 'signin:203.0.113.9', now: Date.now(), windowMs: 60_000, keep: 10, record: true }],
    ['playfield_set_role', { username: 'mallory', role: 'admin', grant: true }],
    ['playfield_list_privileged', {}],
    ['playfield_record_launch', { sessionId: 'planted', gameId: 'g', userId: victim.uid, time: 1 }],
    ['playfield_revoke_session', { userId: victim.uid, tid: 'any', exp: 2_000_000_000 }],
    ['playfield_session_revoked', { userId: victim.uid, tid: 'any' }],
  ]
}

t.test("a user's own session token cannot call any playfield RPC: 403, nothing changes", async (t) => {
  const fake = await startFakeNakama()
  t.teardown(() => fake.close())
  await rpc(fake, 'playfield_sync_leaderboards', { boards: [{ id: 'hi', operator: 'best', sortOrder: 'desc', resetSchedule: null, authoritative: true }] })
  const victim = await authCustom(fake, 'custom-victim-01', 'victim')
  const mallory = await authCustom(fake, 'custom-mallory-1', 'mallory')
  const storage = () => JSON.stringify([...fake.state.storage.keys()].sort())
  const before = storage()
  const calls = attacks(victim, mallory)
  t.same(calls.map(([id]) => id).sort(), [...fake.runtime.rpcs.keys()].sort(), 'every RPC the module registers')
  for (const [id, payload] of calls) {
    const res = await fetch(`${fake.url}/v2/rpc/${id}?unwrap`, {
      method: 'POST', headers: { authorization: `Bearer ${mallory.token}`, 'content-type': 'application/json' }, body: JSON.stringify(payload),
    })
    t.equal(res.status, 403, id)
    t.match(await res.json(), { code: 7, message: 'playfield RPCs are server-to-server: call them with the runtime HTTP key', error: { stackTrace: String } }, id)
  }
  t.equal(storage(), before, 'no storage object written: roles, buckets, launches, revocations')
  t.equal(fake.state.users.get(victim.uid)!.username, 'victim')
  t.notOk(fake.state.leaderboards.boards.has('planted'))
  t.same(fake.state.leaderboards.list('hi', [], 10, '', 0, Date.now()).records, [])
  t.same(await rpc(fake, 'playfield_get_account', { userId: mallory.uid }), { account: { id: mallory.uid, username: 'mallory', roles: [] } })
})

t.test('PUT /v2/account with a user session: a new username is refused by the module\'s hook, other fields pass', async (t) => {
  const fake = await startFakeNakama()
  t.teardown(() => fake.close())
  const ivy = await authCustom(fake, 'custom-ivy-0001', 'ivy')
  const put = (body: unknown) => fetch(`${fake.url}/v2/account`, { method: 'PUT', headers: { authorization: `Bearer ${ivy.token}` }, body: JSON.stringify(body) })
  const refused = { code: 7, message: 'usernames change only through the platform (PUT /api/user/username)' }
  let res = await put({ username: 'ivy2' })
  t.equal(res.status, 403)
  t.same(await res.json(), refused)
  res = await put({ username: 'ivy3', display_name: 'Ivy' })
  t.equal(res.status, 403, 'a request that also renames is refused whole')
  t.same(await res.json(), refused)
  t.match(fake.state.users.get(ivy.uid), { username: 'ivy', displayName: undefined }, 'nothing changed')
  res = await put({ username: 'IVY' })
  t.equal(res.status, 403, 'a change of case is a change: it would skip the rename limit')
  t.same(await res.json(), refused)
  t.equal(fake.state.users.get(ivy.uid)!.username, 'ivy')
  res = await put({ displayName: 'Ivy the Great' })
  t.equal(res.status, 200)
  t.same(await res.json(), {})
  t.equal(fake.state.users.get(ivy.uid)!.displayName, 'Ivy the Great')
  t.equal((await put({ username: 'ivy', display_name: 'Ivy' })).status, 200, 'the current name again is no change')
  t.equal(fake.state.users.get(ivy.uid)!.displayName, 'Ivy')
  t.same(await rpc(fake, 'playfield_rename', { userId: ivy.uid, username: 'ivy4', rule: RENAME_RULE, now: Date.now() }),
    { account: { id: ivy.uid, username: 'ivy4', roles: [] } }, 'the platform\'s rename (nk.accountUpdateId) runs no hook')
})

t.test('within a fire\'s own second, when Nakama\'s bounds pass over that fire, a schedule is reported unchecked, neither the same nor differing; outside it, compared', async (t) => {
  // Found with the fake's port of cronexpr: at 00:00:00.300 Last and Next both skip midnight, and one
  // sync in about 60 reported a minutely board (one in 86,400 a daily one) as differing.
  let clock = Date.parse('2026-11-19T00:00:00.300Z')
  const fake = await startFakeNakama({ now: () => clock })
  t.teardown(() => fake.close())
  const board = (id: string, resetSchedule: string) => ({ id, operator: 'best', sortOrder: 'desc', resetSchedule, authoritative: false, resets: resetTimes(resetSchedule, clock) })
  const boards = () => [board('daily', '0 0 * * *'), board('minutely', '* * * * *'), board('odd-days', '0 0 */2 * *')]
  t.same(await rpc(fake, 'playfield_sync_leaderboards', { boards: boards() }), { created: ['daily', 'minutely', 'odd-days'], differing: [], unchecked: [] })
  const daily = fake.runtime.nk.leaderboardsGetId(['daily'])[0]!
  t.same([daily.prevReset, daily.nextReset], [Date.parse('2026-11-18T00:00:00Z') / 1000, Date.parse('2026-11-20T00:00:00Z') / 1000], 'Nakama\'s bounds pass over midnight')
  t.same(await rpc(fake, 'playfield_sync_leaderboards', { boards: boards() }), { created: [], differing: [], unchecked: ['daily', 'minutely', 'odd-days'] }, 'at the fire\'s second: neither the same nor differing')
  clock = Date.parse('2026-11-19T10:07:00.300Z')
  t.same(await rpc(fake, 'playfield_sync_leaderboards', { boards: boards() }), { created: [], differing: [], unchecked: ['minutely'] }, 'at a minute\'s first second: the others compared')
  // Every day against every other day: Nakama's bounds then straddle a day the catalogue's schedule fires on.
  clock = Date.parse('2026-11-19T12:00:00Z')
  const everyDay = [board('odd-days', '0 0 * * *')]
  t.same(await rpc(fake, 'playfield_sync_leaderboards', { boards: everyDay }), { created: [], differing: ['odd-days'], unchecked: [] }, 'a schedule that skips a day is still reported')
  // Found in review: every two hours against every hour, at 01:00:00.3, has the bounds of an hourly schedule there.
  clock = Date.parse('2026-11-19T01:00:00.300Z')
  t.same(await rpc(fake, 'playfield_sync_leaderboards', { boards: [board('two-hourly', '0 */2 * * *')] }), { created: ['two-hourly'], differing: [], unchecked: [] })
  t.same(await rpc(fake, 'playfield_sync_leaderboards', { boards: [board('two-hourly', '0 * * * *')] }), { created: [], differing: [], unchecked: ['two-hourly'] }, 'not taken for the same in that second')
  clock += 1000
  t.same(await rpc(fake, 'playfield_sync_leaderboards', { boards: [board('two-hourly', '0 * * * *')] }), { created: [], differing: ['two-hourly'], unchecked: [] }, 'and reported a second later')
})

t.test('a changed reset schedule is reported like any other differing setting', async (t) => {
  // A clock of its own, away from any fire's first second (the test above): the real one failed one run in about 60.
  const clock = Date.parse('2026-11-19T10:07:30Z')
  const fake = await startFakeNakama({ now: () => clock })
  t.teardown(() => fake.close())
  const board = (id: string, resetSchedule: string | null) => ({ id, operator: 'best', sortOrder: 'desc', resetSchedule, authoritative: false, resets: resetTimes(resetSchedule, clock) })
  const boards = [board('daily', '0 0 * * *'), board('weekly', '0 0 * * 1'), board('forever', null), board('minutely', '* * * * *')]
  t.same(await rpc(fake, 'playfield_sync_leaderboards', { boards }), { created: ['daily', 'weekly', 'forever', 'minutely'], differing: [], unchecked: [] })
  t.same(Object.keys(fake.runtime.nk.leaderboardsGetId(['daily'])[0]!).sort(), ['authoritative', 'createTime', 'id', 'metadata', 'nextReset', 'operator', 'prevReset', 'sortOrder'],
    "Nakama's leaderboard object: no reset schedule, only the period's bounds")
  t.same(Object.keys(fake.runtime.nk.leaderboardsGetId(['forever'])[0]!).sort(), ['authoritative', 'createTime', 'id', 'metadata', 'operator', 'sortOrder'], 'no bounds without a schedule')
  t.same(await rpc(fake, 'playfield_sync_leaderboards', { boards }), { created: [], differing: [], unchecked: [] }, 'the same schedules are not reported')
  const changed = [board('daily', '30 6 * * *'), board('weekly', null), board('forever', '0 0 1 * *'), board('minutely', '* * * * *')]
  t.same(await rpc(fake, 'playfield_sync_leaderboards', { boards: changed }), { created: [], differing: ['daily', 'weekly', 'forever'], unchecked: [] })
  t.same(fake.state.leaderboards.boards.get('daily')!.resetSchedule, '0 0 * * *', 'creation never changes an existing board')
})
