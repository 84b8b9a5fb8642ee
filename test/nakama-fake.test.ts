import t from 'tap'
import { literal } from './helpers/platform.js'
import { httpStatus } from './fake-nakama/errors.js'
import { signToken } from './fake-nakama/jwt.js'
import { loadRuntime } from './fake-nakama/runtime.js'
import { FakeState } from './fake-nakama/state.js'
import { startFakeNakama, type FakeNakama } from './fake-nakama/server.js'

// The fake Nakama itself holds to nakama-api.md for the calls the backend makes, so tests against
// it say something about a real Nakama.

const basic = (key: string) => `Basic ${Buffer.from(`${key}:`).toString('base64')}`
const claims = (token: string) => JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString())

function post(fake: FakeNakama, path: string, body: unknown, authorization?: string) {
  return fetch(`${fake.url}${path}`, { method: 'POST', headers: authorization ? { authorization } : {}, body: JSON.stringify(body) })
}

t.test('authenticate: server key, query-parameter create and username, error bodies', async (t) => {
  const fake = await startFakeNakama()
  t.teardown(() => fake.close())
  let res = await post(fake, '/v2/account/authenticate/custom', { id: 'custom-0001' })
  t.equal(res.status, 401)
  t.same(await res.json(), { code: 16, message: 'Server key required' })
  res = await post(fake, '/v2/account/authenticate/custom', { id: 'custom-0001' }, basic('wrong'))
  t.same(await res.json(), { code: 16, message: 'Server key invalid' })
  res = await post(fake, '/v2/account/authenticate/custom?create=false', { id: 'custom-0001' }, basic(fake.serverKey))
  t.equal(res.status, 404)
  t.same(await res.json(), { code: 5, message: 'User account not found.' })
  // grpc-gateway parses the flag with strconv.ParseBool.
  for (const no of ['0', 'f', 'F', 'False', 'FALSE']) {
    t.equal((await post(fake, `/v2/account/authenticate/custom?create=${no}`, { id: 'custom-0001' }, basic(fake.serverKey))).status, 404, `create=${no}`)
  }
  for (const bad of ['no', 'garbage', '']) {
    res = await post(fake, `/v2/account/authenticate/custom?create=${bad}`, { id: 'custom-0001' }, basic(fake.serverKey))
    t.equal(res.status, 400, `create=${bad}`)
    t.match(await res.json(), { code: 3, message: /strconv\.ParseBool/ })
  }
  res = await post(fake, '/v2/account/authenticate/custom', { id: 'custom-0001', create: false }, basic(fake.serverKey))
  const created = await res.json() as Record<string, unknown>
  t.equal(created.created, true, '"create" in the body is dropped: created anyway')
  t.match(claims(created.token as string).usn, /^[A-Za-z]{10}$/, 'a generated name')
  res = await post(fake, '/v2/account/authenticate/custom?username=other', { id: 'custom-0001' }, basic(fake.serverKey))
  const again = await res.json() as Record<string, unknown>
  t.notOk('created' in again, 'created: false is left out')
  t.equal(claims(again.token as string).usn, claims(created.token as string).usn, 'an existing id ignores username')
  res = await post(fake, '/v2/account/authenticate/custom?username=Alice', { id: 'custom-0002' }, basic(fake.serverKey))
  res = await post(fake, '/v2/account/authenticate/custom?username=Alice', { id: 'custom-0003' }, basic(fake.serverKey))
  t.equal(res.status, 409)
  t.same(await res.json(), { code: 6, message: 'Username is already in use.' })
  res = await post(fake, '/v2/account/authenticate/custom?username=alice', { id: 'custom-0003' }, basic(fake.serverKey))
  t.equal(res.status, 200, 'names are case-sensitive')
  res = await post(fake, '/v2/account/authenticate/email?create=false&username=Alice', { password: 'whatever1' }, basic(fake.serverKey))
  t.equal(res.status, 401, 'a custom account has no password')
  t.same(await res.json(), { code: 16, message: 'Invalid credentials.' })
  res = await post(fake, '/v2/account/authenticate/email?username=nobody', { password: 'whatever1' }, basic(fake.serverKey))
  t.equal(res.status, 404)
  res = await post(fake, '/v2/account/authenticate/email', { email: 'a@b.example', password: 'short' }, basic(fake.serverKey))
  t.same(await res.json(), { code: 3, message: 'Password must be at least 8 characters long.' })
  res = await post(fake, '/v2/account/authenticate/email', { email: 'é@b.example', password: 'ééééé' }, basic(fake.serverKey))
  t.equal(res.status, 200, 'lengths are bytes (Go), not characters: 10 and 10 bytes pass')
  res = await post(fake, '/v2/account/authenticate/custom?username=a%0Ab', { id: 'custom-0001' }, basic(fake.serverKey))
  t.equal(res.status, 400, 'a given username is checked before the id is looked up, even for an existing id')
  t.same(await res.json(), { code: 3, message: 'Username invalid, no spaces or control characters allowed.' })
  res = await post(fake, `/v2/account/authenticate/email?create=false&username=${'n'.repeat(129)}`, { password: 'whatever1' }, basic(fake.serverKey))
  t.equal(res.status, 400, 'a login name past 128 bytes: 400, not 404')
})

t.test('logout checks every token it is given, as Nakama does: an expired or foreign one fails the whole call', async (t) => {
  const fake = await startFakeNakama()
  t.teardown(() => fake.close())
  const signIn = async (id: string) => (await (await post(fake, `/v2/account/authenticate/custom?username=${id}`, { id: `custom-${id}` }, basic(fake.serverKey))).json()) as { token: string; refresh_token: string }
  const s = await signIn('carol')
  const other = await signIn('dave')
  const uid = claims(s.token).uid as string
  const expired = signToken({ ...claims(s.token), exp: Math.floor(Date.now() / 1000) - 1 }, 'fake-encryption-key')
  const nk = fake.runtime.nk
  t.throws(() => nk.sessionLogout(uid, expired, s.refresh_token), { message: 'failed to logout: session token invalid' }, 'runtime: an expired session token fails the call')
  t.throws(() => nk.sessionLogout(uid, undefined, other.refresh_token), { message: 'failed to logout: refresh token invalid' }, "runtime: another user's token fails it")
  t.throws(() => nk.sessionLogout(uid, null, s.refresh_token), TypeError, 'runtime: null is not absent')
  const refresh = async (token: string) => post(fake, '/v2/account/session/refresh', { token }, basic(fake.serverKey))
  t.equal((await refresh(s.refresh_token)).status, 200, 'nothing was invalidated by the failed calls')
  const rest = await post(fake, '/v2/session/logout', { token: expired, refresh_token: s.refresh_token }, `Bearer ${s.token}`)
  t.same([rest.status, await rest.json()], [400, { code: 3, message: 'Session token invalid.' }], 'REST: an expired session token in the body is refused')
  t.equal((await refresh(s.refresh_token)).status, 200, 'and invalidates nothing')
  nk.sessionLogout(uid, undefined, s.refresh_token)
  t.equal((await refresh(s.refresh_token)).status, 401, 'the refresh token alone ends the session')
})

t.test('tokens, refresh and logout follow Nakama (same tid, not single use, in-memory blacklist)', async (t) => {
  const fake = await startFakeNakama({ session: { tokenExpirySec: 600 } })
  t.teardown(() => fake.close())
  const res = await post(fake, '/v2/account/authenticate/custom?username=bob', { id: 'custom-bob1' }, basic(fake.serverKey))
  const s = await res.json() as { token: string; refresh_token: string }
  const c = claims(s.token)
  t.same(Object.keys(c).sort(), ['exp', 'iat', 'tid', 'uid', 'usn'])
  t.equal(c.exp - c.iat, 600)
  t.same(JSON.parse(Buffer.from(s.token.split('.')[0]!, 'base64url').toString()), { alg: 'HS256', typ: 'JWT' })
  const refresh = async (token: string) => post(fake, '/v2/account/session/refresh', { token }, basic(fake.serverKey))
  fake.state.rename(c.uid, 'bobby')
  const first = await (await refresh(s.refresh_token)).json() as { token: string }
  t.equal(claims(first.token).tid, c.tid)
  t.equal(claims(first.token).usn, 'bobby', 'the username is re-read')
  t.equal((await refresh(s.refresh_token)).status, 200, 'not single use')
  t.same(await (await refresh(s.token)).json(), { code: 16, message: 'Refresh token invalid or expired.' }, 'a session token is no refresh token')
  t.same(await (await refresh('')).json(), { code: 3, message: 'Refresh token is required.' })
  const out = await post(fake, '/v2/session/logout', { token: s.token, refresh_token: s.refresh_token }, `Bearer ${s.token}`)
  t.same(await out.json(), {})
  t.equal((await fetch(`${fake.url}/v2/account`, { headers: { authorization: `Bearer ${first.token}` } })).status, 401, 'the refreshed token shares the tid')
  t.equal((await refresh(s.refresh_token)).status, 401)
  await fake.restart()
  t.equal((await refresh(s.refresh_token)).status, 200, 'a restart forgets logouts')
})

t.test('PUT /v2/account: a taken name is 400 code 3, with the message of each version', async (t) => {
  for (const version of ['3.18', '3.40'] as const) {
    // Nakama's own behaviour: without the playfield module, whose hook refuses renames here.
    const fake = await startFakeNakama({ version, module: null })
    t.teardown(() => fake.close())
    await post(fake, '/v2/account/authenticate/custom?username=carol', { id: 'custom-carol' }, basic(fake.serverKey))
    const s = await (await post(fake, '/v2/account/authenticate/custom?username=dave', { id: 'custom-dave' }, basic(fake.serverKey))).json() as { token: string }
    const put = (body: unknown) => fetch(`${fake.url}/v2/account`, { method: 'PUT', headers: { authorization: `Bearer ${s.token}` }, body: JSON.stringify(body) })
    const res = await put({ username: 'carol' })
    t.equal(res.status, 400, version)
    t.same(await res.json(), { code: 3, message: version === '3.18' ? 'Username is already in use.' : 'rpc error: code = AlreadyExists desc = Username is already in use.' })
    t.same(await (await put({})).json(), { code: 3, message: 'No fields to update.' })
    t.equal((await put({ username: 'dave2' })).status, 200)
    t.equal(claims(s.token).usn, 'dave', 'the token keeps the old name')
    t.equal('iat' in claims(s.token), version === '3.40', 'iat only from 3.25')
  }
})

t.test('v3.18 keeps ranks always and caps limit at 100; v3.40 ranks only with enableRanks', async (t) => {
  for (const version of ['3.18', '3.40'] as const) {
    const fake = await startFakeNakama({ version })
    t.teardown(() => fake.close())
    fake.runtime.nk.leaderboardCreate('plain', false, 'desc', 'best', null, {}, false)
    const s = await (await post(fake, '/v2/account/authenticate/custom?username=erin', { id: 'custom-erin' }, basic(fake.serverKey))).json() as { token: string }
    const rec = await (await post(fake, '/v2/leaderboard/plain', { score: 5, operator: 'SET' }, `Bearer ${s.token}`)).json() as Record<string, unknown>
    for (const operator of ['increment', 'FOO', '3']) {
      const refused = await post(fake, '/v2/leaderboard/plain', { score: 9, operator }, `Bearer ${s.token}`)
      t.same([refused.status, ((await refused.json()) as { code: number }).code], [400, 3], `${version}: operator ${JSON.stringify(operator)} is no enum name`)
    }
    t.equal(rec.rank, version === '3.18' ? '1' : undefined, `${version}: rank`)
    const list = await fetch(`${fake.url}/v2/leaderboard/plain?limit=101`, { headers: { authorization: `Bearer ${s.token}` } })
    t.equal(list.status, version === '3.18' ? 400 : 200, `${version}: limit 101`)
  }
})

t.test("errors: grpc-gateway's HTTPStatusFromCode for all 17 codes; a module's Aborted (10) is 409", async (t) => {
  const table = [200, 499, 500, 400, 504, 404, 409, 403, 429, 400, 409, 400, 501, 500, 503, 500, 401]
  t.same(table.map((_, code) => httpStatus(code)), table)
  const fake = await startFakeNakama({ module: 'function InitModule(ctx, logger, nk, initializer) { initializer.registerRpc("busy", rpcBusy) }\nfunction rpcBusy() { throw { message: "bucket stayed contended", code: 10 } }' })
  t.teardown(() => fake.close())
  const res = await post(fake, `/v2/rpc/busy?http_key=${fake.httpKey}&unwrap`, {})
  t.equal(res.status, 409)
  t.match(await res.json(), { code: 10, message: 'bucket stayed contended', error: { stackTrace: String } })
})

t.test('REST leaderboard write: int64 exact, fractions and out-of-range values refused, negatives fail in the database', async (t) => {
  const fake = await startFakeNakama()
  t.teardown(() => fake.close())
  fake.runtime.nk.leaderboardCreate('open', false, 'desc', 'best', null, {}, true)
  const s = await (await post(fake, '/v2/account/authenticate/custom?username=gus', { id: 'custom-gus-01' }, basic(fake.serverKey))).json() as { token: string }
  const write = (body: string) => fetch(`${fake.url}/v2/leaderboard/open`, { method: 'POST', headers: { authorization: `Bearer ${s.token}` }, body })
  for (const [body, shown] of [['{"score": 1.5}', '1.5'], ['{"score": "1.5"}', '"1.5"'], ['{"score": 9223372036854775808}', '9223372036854775808'],
    ['{"score": "-9223372036854775809"}', '"-9223372036854775809"'], ['{"score": "1e19"}', '"1e19"'], ['{"score": " 5"}', '" 5"'], ['{"subscore": true}', 'true']] as const) {
    const res = await write(body)
    t.equal(res.status, 400, body)
    const err = await res.json() as { code: number; message: string }
    t.equal(err.code, 3, body)
    t.match(err.message, new RegExp(`^proto: \\(line 1:\\d+\\): invalid value for int64 type: ${literal(shown)}$`), body)
  }
  t.equal(fake.state.leaderboards.list('open', [], 10, '', 0, Date.now()).records.length, 0, 'nothing was written')
  let res = await write('{"score": 9223372036854775807, "subscore": "2.0"}')
  t.equal(res.status, 200)
  t.match(await res.json(), { score: '9223372036854775807', subscore: '2' }, 'the largest int64, exact; 2.0 is integral')
  res = await write('{"score": "1e2", "subscore": 3}')
  t.match(await res.json(), { score: '9223372036854775807', subscore: '3' }, 'best keeps the better score, and the better subscore')
  res = await write('{"score": -1, "subscore": 9}')
  t.equal(res.status, 500, 'a negative best fails the CHECK constraint even on an existing row')
  t.same(await res.json(), { code: 13, message: 'Error writing score to leaderboard.' })
  t.match(fake.state.leaderboards.list('open', [], 10, '', 0, Date.now()).records[0], { score: 9223372036854775807n, subscore: 3n, numScore: 2 }, 'unchanged')
})

t.test('request bodies past socket.max_request_size_bytes are refused with 400', async (t) => {
  const fake = await startFakeNakama()
  t.teardown(() => fake.close())
  const big = JSON.stringify({ id: 'custom-big-01', vars: { pad: 'x'.repeat(262_144) } })
  let res = await post(fake, '/v2/account/authenticate/custom?username=big', JSON.parse(big), basic(fake.serverKey))
  t.equal(res.status, 400)
  t.same(await res.json(), { code: 3, message: 'http: request body too large' })
  t.equal(fake.state.byUsername('big'), undefined)
  res = await fetch(`${fake.url}/v2/rpc/playfield_list_privileged?http_key=${fake.httpKey}&unwrap`, { method: 'POST', body: 'x'.repeat(262_145) })
  t.equal(res.status, 400)
  t.same(await res.json(), { code: 3, message: 'http: request body too large' }, "the RPC handler's own body, without error")
  res = await fetch(`${fake.url}/v2/rpc/playfield_list_privileged?http_key=${fake.httpKey}&unwrap`, { method: 'POST', body: `{"pad":"${'x'.repeat(262_144 - 10)}"}` })
  t.equal(res.status, 200, 'exactly at the limit is fine')
})

t.test('authentication errors: a non-Basic header is an invalid server key; the RPC path answers in its own shape', async (t) => {
  const fake = await startFakeNakama()
  t.teardown(() => fake.close())
  const s = await (await post(fake, '/v2/account/authenticate/custom?username=hal', { id: 'custom-hal-01' }, basic(fake.serverKey))).json() as { token: string }
  for (const header of [`Bearer ${s.token}`, 'Token abc', `Basic ${Buffer.from(fake.serverKey).toString('base64')}`]) {
    const res = await post(fake, '/v2/account/authenticate/custom', { id: 'custom-hal-02' }, header)
    t.equal(res.status, 401, header)
    t.same(await res.json(), { code: 16, message: 'Server key invalid' }, header)
  }
  const rpc = (authorization: string) => fetch(`${fake.url}/v2/rpc/playfield_list_privileged?unwrap`, { method: 'POST', headers: { authorization }, body: '{}' })
  for (const header of ['Bearer not-a-token', 'Token abc', `Basic ${Buffer.from(fake.httpKey).toString('base64')}`]) {
    const res = await rpc(header)
    t.equal(res.status, 401, header)
    t.same(await res.json(), { error: 'Auth token invalid', message: 'Auth token invalid', code: 16 }, header)
  }
  await post(fake, '/v2/session/logout', {}, `Bearer ${s.token}`)
  t.same(await (await rpc(`Bearer ${s.token}`)).json(), { error: 'Auth token invalid', message: 'Auth token invalid', code: 16 }, 'a logged-out token')
  const res = await fetch(`${fake.url}/v2/account`, { headers: { authorization: 'Token abc' } })
  t.same(await res.json(), { code: 16, message: 'Auth token invalid' }, 'a session route: a header that is no Bearer token is invalid')
  t.same(await (await fetch(`${fake.url}/v2/account`)).json(), { code: 16, message: 'Auth token required' })
})

t.test("UpdateAccount before-hook: Nakama's request shape, null disables the call, a returned request replaces it", async (t) => {
  const module = `function InitModule(ctx, logger, nk, initializer) { initializer.registerBeforeUpdateAccount(beforeUpdate) }
function beforeUpdate(ctx, logger, nk, data) {
  seen.push({ ctx: { userId: ctx.userId, username: ctx.username, executionMode: ctx.executionMode }, data: JSON.parse(JSON.stringify(data)) });
  if (data.location === 'nowhere') return null;
  if (data.location === 'bad') return { displayName: 42 };
  if (data.location === 'throw') throw new Error('boom');
  data.displayName = data.displayName && data.displayName.toUpperCase();
  return data;
}
var seen = [];`
  const fake = await startFakeNakama({ module })
  t.teardown(() => fake.close())
  t.throws(() => loadRuntime(new FakeState({ iat: true, maxLimit: 1000, ranksFlag: true, wrappedRenameError: true }, Date.now),
    'function InitModule(ctx, logger, nk, initializer) { initializer.registerBeforeUpdateAccount(function (c, l, n, d) { return d }) }'), /top-level named function/)
  const s = await (await post(fake, '/v2/account/authenticate/custom?username=jo', { id: 'custom-jo-0001' }, basic(fake.serverKey))).json() as { token: string }
  const put = (body: unknown) => fetch(`${fake.url}/v2/account`, { method: 'PUT', headers: { authorization: `Bearer ${s.token}` }, body: JSON.stringify(body) })
  t.equal((await put({ display_name: 'jo jo' })).status, 200)
  t.same(JSON.parse(JSON.stringify(fake.runtime.scope.seen[0])), {
    ctx: { userId: claims(s.token).uid, username: 'jo', executionMode: 'before' },
    data: { username: null, displayName: 'jo jo', avatarUrl: null, langTag: null, location: null, timezone: null },
  }, 'lowerCamelCase names, every field present, unset ones null')
  t.equal(fake.state.byUsername('jo')!.displayName, 'JO JO', 'the returned request is the one applied')
  let res = await put({ location: 'nowhere', username: 'jo2' })
  t.equal(res.status, 404)
  t.same(await res.json(), { code: 5, message: 'Requested resource was not found.' })
  res = await put({ location: 'bad' })
  t.same([res.status, await res.json()], [500, { code: 13, message: 'Could not complete runtime Before function.' }])
  res = await put({ location: 'throw' })
  t.equal(res.status, 500, 'an uncaught exception is Internal')
  t.equal(fake.state.byUsername('jo')!.username, 'jo', 'nothing applied')
})

t.test('POST /v2/account/authenticate/device: server key, a 10-128 byte id, create and username in the query (§1.1)', async (t) => {
  const fake = await startFakeNakama()
  t.teardown(() => fake.close())
  const device = (id: unknown, query = '', authorization = basic(fake.serverKey)) => post(fake, `/v2/account/authenticate/device${query}`, { id }, authorization)
  let res = await device('device-id-0001', '', basic('wrong'))
  t.same([res.status, await res.json()], [401, { code: 16, message: 'Server key invalid' }])
  res = await device('device-id-0001', '?create=false')
  t.same([res.status, await res.json()], [404, { code: 5, message: 'User account not found.' }])
  res = await device('device-id-0001', '?username=dora')
  t.equal(res.status, 200)
  const created = await res.json() as { created?: boolean; token: string; refresh_token: string }
  t.same(Object.keys(created).sort(), ['created', 'refresh_token', 'token'])
  t.equal(claims(created.token).usn, 'dora')
  const again = await (await device('device-id-0001', '?username=other&create=false')).json() as Record<string, unknown>
  t.notOk('created' in again, 'an existing device signs in, created left out')
  t.equal(claims(again.token as string).uid, claims(created.token).uid, 'the same account; username ignored')
  for (const [id, message] of [['', 'Device ID is required.'], ['short-id1', 'Device ID invalid, must be 10-128 bytes.'], ['d'.repeat(129), 'Device ID invalid, must be 10-128 bytes.'], ['device id 0002', 'Device ID invalid, no spaces or control characters allowed.']]) {
    res = await device(id)
    t.same([res.status, await res.json()], [400, { code: 3, message }], JSON.stringify(id).slice(0, 20))
  }
  res = await device('device-id-0002', '?username=dora')
  t.same([res.status, await res.json()], [409, { code: 6, message: 'Username is already in use.' }])
  const account = await (await fetch(`${fake.url}/v2/account`, { headers: { authorization: `Bearer ${created.token}` } })).json()
  t.match(account, { user: { username: 'dora' }, devices: [{ id: 'device-id-0001' }] })
})

t.test('GET /v2/leaderboard/{id}/owner/{owner_id}: a window around the owner, ranks from the rank cache (§1.8)', async (t) => {
  const fake = await startFakeNakama()
  t.teardown(() => fake.close())
  const nk = fake.runtime.nk
  nk.leaderboardCreate('hay', false, 'desc', 'best', null, {}, true)
  const s = await (await post(fake, '/v2/account/authenticate/custom?username=hana', { id: 'custom-hana-01' }, basic(fake.serverKey))).json() as { token: string }
  const owners = ['00000000-0000-4000-8000-000000000005', '00000000-0000-4000-8000-000000000004', '00000000-0000-4000-8000-000000000003', '00000000-0000-4000-8000-000000000002', '00000000-0000-4000-8000-000000000001']
  for (const [i, owner] of owners.entries()) nk.leaderboardRecordWrite('hay', owner, `p${i}`, 50 - 10 * i)
  const get = (path: string) => fetch(`${fake.url}${path}`, { headers: { authorization: `Bearer ${s.token}` } })
  let res = await get(`/v2/leaderboard/hay/owner/${owners[2]}?limit=3`)
  t.equal(res.status, 200)
  const window = await res.json() as { records: Array<{ owner_id: string; score: string; rank: string }>; next_cursor: string; prev_cursor: string; rank_count: string }
  t.same(window.records.map((r) => [r.owner_id, r.score, r.rank]), [[owners[1], '40', '2'], [owners[2], '30', '3'], [owners[3], '20', '4']])
  t.equal(window.rank_count, '5')
  t.type(window.prev_cursor, 'string')
  const next = await (await get(`/v2/leaderboard/hay/owner/${owners[2]}?limit=3&cursor=${window.next_cursor}`)).json() as typeof window
  t.same(next.records.map((r) => [r.owner_id, r.rank]), [[owners[4], '5']], 'with a cursor it is a regular listing')
  t.same((await (await get(`/v2/leaderboard/hay/owner/${owners[2]}`)).json() as typeof window).records.map((r) => r.owner_id), [owners[2]], 'limit defaults to 1')
  res = await get('/v2/leaderboard/hay/owner/00000000-0000-4000-8000-0000000000ff?limit=5')
  t.same([res.status, await res.json()], [200, {}], 'an owner without a record: empty, not 404')
  for (const [path, status, body] of [
    ['/v2/leaderboard/hay/owner/not-a-uuid', 400, { code: 3, message: 'Invalid owner ID provided.' }],
    [`/v2/leaderboard/hay/owner/${owners[0]}?limit=101`, 400, { code: 3, message: 'Invalid limit - limit must be between 1 and 100.' }],
    [`/v2/leaderboard/nope/owner/${owners[0]}`, 404, { code: 5, message: 'Leaderboard not found.' }],
  ] as const) {
    res = await get(path)
    t.same([res.status, await res.json()], [status, body], path)
  }
  t.equal((await fetch(`${fake.url}/v2/leaderboard/hay/owner/${owners[0]}`)).status, 401, 'Bearer auth')
})

t.test('PUT /v2/account: a display_name past VARCHAR(255) fails in the database with 500 code 13, changing nothing (§1.5)', async (t) => {
  const fake = await startFakeNakama({ module: null })
  t.teardown(() => fake.close())
  const s = await (await post(fake, '/v2/account/authenticate/custom?username=kim', { id: 'custom-kim-01' }, basic(fake.serverKey))).json() as { token: string }
  const put = (body: unknown) => fetch(`${fake.url}/v2/account`, { method: 'PUT', headers: { authorization: `Bearer ${s.token}` }, body: JSON.stringify(body) })
  let res = await put({ username: 'kim2', display_name: 'x'.repeat(256) })
  t.same([res.status, await res.json()], [500, { code: 13, message: 'Error while trying to update account.' }])
  t.equal(fake.state.byUsername('kim')?.displayName, undefined, 'neither the name nor the display name changed')
  res = await put({ display_name: 'é'.repeat(255) })
  t.equal(res.status, 200, '255 characters fit, whatever their bytes')
  t.equal(fake.state.byUsername('kim')!.displayName, 'é'.repeat(255))
})

t.test('/v2/rpc/{id} is routed for POST and GET only: another method never runs the function (§1.9)', async (t) => {
  const fake = await startFakeNakama({ module: 'function InitModule(ctx, logger, nk, initializer) { initializer.registerRpc("count", rpcCount) }\nvar runs = 0;\nfunction rpcCount() { runs++; return "{}" }' })
  t.teardown(() => fake.close())
  for (const method of ['PUT', 'DELETE', 'PATCH']) {
    const res = await fetch(`${fake.url}/v2/rpc/count?http_key=${fake.httpKey}&unwrap`, { method, body: '{}' })
    // The gateway knows the path under other methods: grpc-gateway's 405, as Unimplemented (handleRoutingError).
    t.same([res.status, await res.json()], [501, { code: 12, message: 'Method Not Allowed' }], method)
  }
  t.equal(fake.runtime.scope.runs, 0, 'the function did not run')
  t.equal((await fetch(`${fake.url}/v2/rpc/count?http_key=${fake.httpKey}&unwrap`, { method: 'POST', body: '{}' })).status, 200)
  t.equal((await fetch(`${fake.url}/v2/rpc/count?http_key=${fake.httpKey}`)).status, 200)
  t.equal(fake.runtime.scope.runs, 2)
  const res = await fetch(`${fake.url}/v2/account/authenticate/custom`)
  t.same([res.status, await res.json()], [501, { code: 12, message: 'Method Not Allowed' }], 'any known path under a method it lacks')
})

t.test('logout: a non-string token is a protojson 400, not an absent one that ends every session (§1.0, §1.3)', async (t) => {
  const fake = await startFakeNakama()
  t.teardown(() => fake.close())
  const s = await (await post(fake, '/v2/account/authenticate/custom?username=lou', { id: 'custom-lou-01' }, basic(fake.serverKey))).json() as { token: string; refresh_token: string }
  for (const [body, message] of [['{"token":123}', 'proto: (line 1:10): invalid value for string type: 123'], ['{"refresh_token":true}', 'proto: (line 1:18): invalid value for string type: true']] as const) {
    const res = await fetch(`${fake.url}/v2/session/logout`, { method: 'POST', headers: { authorization: `Bearer ${s.token}` }, body })
    t.same([res.status, await res.json()], [400, { code: 3, message }], body)
  }
  t.equal((await fetch(`${fake.url}/v2/account`, { headers: { authorization: `Bearer ${s.token}` } })).status, 200, 'the session is still valid')
  t.equal((await post(fake, '/v2/account/session/refresh', { token: s.refresh_token }, basic(fake.serverKey))).status, 200)
  const res = await post(fake, '/v2/account/session/refresh', { token: 42 }, basic(fake.serverKey))
  t.same([res.status, await res.json()], [400, { code: 3, message: 'proto: (line 1:10): invalid value for string type: 42' }], 'refresh reads its token the same way')
})

t.test('owner ids: an upper-case UUID is a UUID (uuid.FromString), matched as the stored lower-case one (§1.7, §1.8)', async (t) => {
  const fake = await startFakeNakama()
  t.teardown(() => fake.close())
  fake.runtime.nk.leaderboardCreate('b', false, 'desc', 'best', null, {}, true)
  const s = await (await post(fake, '/v2/account/authenticate/custom?username=max', { id: 'custom-max-01' }, basic(fake.serverKey))).json() as { token: string }
  const uid = claims(s.token).uid as string
  await fetch(`${fake.url}/v2/leaderboard/b`, { method: 'POST', headers: { authorization: `Bearer ${s.token}` }, body: '{"score":"10"}' })
  const get = (path: string) => fetch(`${fake.url}${path}`, { headers: { authorization: `Bearer ${s.token}` } })
  let res = await get(`/v2/leaderboard/b?limit=1&owner_ids=${uid.toUpperCase()}`)
  t.equal(res.status, 200)
  t.match(await res.json(), { owner_records: [{ owner_id: uid, score: '10', rank: '1' }] })
  res = await get(`/v2/leaderboard/b/owner/${uid.toUpperCase()}`)
  t.match(await res.json(), { records: [{ owner_id: uid, rank: '1' }] })
  res = await get('/v2/leaderboard/b?limit=1&owner_ids=not-a-uuid')
  t.same([res.status, await res.json()], [400, { code: 3, message: 'One or more owner IDs are invalid.' }])
})

t.test('CORS: any origin, with Authorization, Content-Type and User-Agent, as gorilla/handlers answers (§1.0)', async (t) => {
  const fake = await startFakeNakama()
  t.teardown(() => fake.close())
  const preflight = (method: string, headers: string) => fetch(`${fake.url}/v2/account`, {
    method: 'OPTIONS', headers: { origin: 'https://game.example', 'access-control-request-method': method, 'access-control-request-headers': headers },
  })
  let res = await preflight('GET', 'authorization')
  t.equal(res.status, 200)
  t.equal(await res.text(), '')
  t.equal(res.headers.get('access-control-allow-origin'), '*')
  t.equal(res.headers.get('access-control-allow-headers'), 'Authorization')
  t.equal(res.headers.get('access-control-allow-methods'), null, 'GET is a simple method')
  res = await preflight('PUT', 'authorization, content-type')
  t.same([res.status, res.headers.get('access-control-allow-methods'), res.headers.get('access-control-allow-headers')], [200, 'PUT', 'Authorization,Content-Type'])
  t.equal((await preflight('PATCH', 'authorization')).status, 405, 'a method outside GET HEAD POST PUT DELETE')
  t.equal((await preflight('GET', 'x-custom')).status, 403, 'a header outside the list')
  res = await fetch(`${fake.url}/v2/account`, { headers: { origin: 'https://game.example' } })
  t.same([res.status, res.headers.get('access-control-allow-origin')], [401, '*'], 'an actual request gets the origin header too')
  // Every response carries Cache-Control, preflight answers included.
  for (const [method, headers, status] of [['GET', 'authorization', 200], ['PATCH', 'authorization', 405], ['GET', 'x-custom', 403]] as const) {
    res = await preflight(method, headers)
    t.same([res.status, res.headers.get('cache-control')], [status, 'no-store, no-cache, must-revalidate'], `preflight ${method} ${headers}: Cache-Control`)
  }
  res = await fetch(`${fake.url}/v2/account`, { method: 'OPTIONS' })
  t.same([res.status, res.headers.get('cache-control')], [200, 'no-store, no-cache, must-revalidate'], 'an OPTIONS without Origin: Cache-Control')
})

t.test('reset schedules are read as cronexpr reads them: 6 fields end with a year, 7 start with seconds, day lists and N/step (§3.4)', async (t) => {
  const fake = await startFakeNakama({ now: () => Date.parse('2026-11-18T10:00:00Z') })
  t.teardown(() => fake.close())
  const nk = fake.runtime.nk
  for (const [i, [schedule, next]] of ([
    ['0 0 * * 1', '2026-11-23T00:00:00Z'],
    ['0 0 * * 1 *', '2026-11-23T00:00:00Z'],
    ['0 12 * * * 2027', '2027-01-01T12:00:00Z'],
    ['30 0 12 * * * *', '2026-11-18T12:00:30Z'],
    ['@daily', '2026-11-19T00:00:00Z'],
    // A day list holding * leaves the field unrestricted (the 20th alone, not "or any day");
    // N/step runs from N to the field's end (weekdays 0-6, 7 being 0).
    ['0 0 20 * *,3', '2026-11-20T00:00:00Z'],
    ['0 0 1/10 * *', '2026-11-21T00:00:00Z'],
    ['0 0 0 * * 7/3 *', '2026-11-21T00:00:00Z'],
  ] as const).entries()) {
    nk.leaderboardCreate(`c${i}`, false, 'desc', 'best', schedule, {}, true)
    t.equal(new Date(nk.leaderboardsGetId([`c${i}`])[0]!.nextReset! * 1000).toISOString().replace('.000Z', 'Z'), next, schedule)
  }
  t.throws(() => nk.leaderboardCreate('short', false, 'desc', 'best', '0 0 * *', {}, true), TypeError, 'four fields are too few')
})

t.test('list cursors: a prev_cursor lists the page before, in rank order; never the same page (§1.7)', async (t) => {
  const fake = await startFakeNakama()
  t.teardown(() => fake.close())
  const nk = fake.runtime.nk
  const owners = ['00000000-0000-4000-8000-000000000001', '00000000-0000-4000-8000-000000000002', '00000000-0000-4000-8000-000000000003', '00000000-0000-4000-8000-000000000004', '00000000-0000-4000-8000-000000000005']
  for (const sort of ['desc', 'asc'] as const) {
    nk.leaderboardCreate(`pages-${sort}`, false, sort, 'best', null, {}, true)
    // Rank order is owners[0] first on both boards.
    for (const [i, owner] of owners.entries()) nk.leaderboardRecordWrite(`pages-${sort}`, owner, `p${i}`, sort === 'desc' ? 50 - 10 * i : 10 + 10 * i)
  }
  const s = await (await post(fake, '/v2/account/authenticate/custom?username=pia', { id: 'custom-pia-01' }, basic(fake.serverKey))).json() as { token: string }
  type Page = { records?: Array<{ owner_id: string; rank: string }>; next_cursor?: string; prev_cursor?: string }
  for (const sort of ['desc', 'asc'] as const) {
    const get = async (cursor?: string): Promise<Page> => {
      const res = await fetch(`${fake.url}/v2/leaderboard/pages-${sort}?limit=2${cursor ? `&cursor=${cursor}` : ''}`, { headers: { authorization: `Bearer ${s.token}` } })
      t.equal(res.status, 200, `${sort}: listing ${cursor ? 'from a cursor' : 'from the top'}`)
      return await res.json() as Page
    }
    const shown = (page: Page) => (page.records ?? []).map((r) => [r.owner_id, r.rank])
    const first = await get()
    t.same(shown(first), [[owners[0], '1'], [owners[1], '2']], `${sort}: page 1`)
    t.notOk(first.prev_cursor, `${sort}: no prev_cursor on the first page`)
    const second = await get(first.next_cursor)
    t.same(shown(second), [[owners[2], '3'], [owners[3], '4']], `${sort}: page 2`)
    t.ok(second.prev_cursor, `${sort}: page 2 has a prev_cursor`)
    t.not(second.prev_cursor, first.next_cursor, `${sort}: the prev_cursor is not the cursor that led here`)
    const back = await get(second.prev_cursor)
    t.same(shown(back), [[owners[0], '1'], [owners[1], '2']], `${sort}: prev_cursor of page 2 is page 1, in rank order, ranked as before`)
    t.notOk(back.prev_cursor, `${sort}: nothing before page 1`)
    t.same(shown(await get(back.next_cursor)), shown(second), `${sort}: and its next_cursor is page 2 again`)
    const third = await get(second.next_cursor)
    t.same(shown(third), [[owners[4], '5']], `${sort}: page 3`)
    t.notOk(third.next_cursor, `${sort}: the last page has no next_cursor`)
    const backFromThird = await get(third.prev_cursor)
    t.same(shown(backFromThird), shown(second), `${sort}: prev_cursor of page 3 is page 2`)
    t.same(shown(await get(backFromThird.prev_cursor)), shown(first), `${sort}: and its prev_cursor page 1`)
    t.same(shown(await get(backFromThird.next_cursor)), shown(third), `${sort}: and its next_cursor page 3`)
  }
  // The haystack's prev_cursor pages upwards through the same listing.
  const get = (path: string) => fetch(`${fake.url}${path}`, { headers: { authorization: `Bearer ${s.token}` } })
  const window = await (await get(`/v2/leaderboard/pages-desc/owner/${owners[4]}?limit=2`)).json() as Page
  t.same((window.records ?? []).map((r) => r.owner_id), [owners[3], owners[4]])
  const res = await get(`/v2/leaderboard/pages-desc?limit=2&cursor=${window.prev_cursor}`)
  t.equal(res.status, 200, "a haystack's prev_cursor is a valid cursor")
  t.same(((await res.json()) as Page).records!.map((r) => [r.owner_id, r.rank]), [[owners[1], '2'], [owners[2], '3']])
})

t.test('REST leaderboard write: the body is decoded before the board is looked up; the operator by name or number 0-4 (§1.0, §1.6)', async (t) => {
  const fake = await startFakeNakama()
  t.teardown(() => fake.close())
  const nk = fake.runtime.nk
  nk.leaderboardCreate('open', false, 'desc', 'best', null, {}, true)
  nk.leaderboardCreate('server', true, 'desc', 'best', null, {}, true)
  const s = await (await post(fake, '/v2/account/authenticate/custom?username=ole', { id: 'custom-ole-01' }, basic(fake.serverKey))).json() as { token: string }
  const write = (board: string, body: string) => fetch(`${fake.url}/v2/leaderboard/${board}`, { method: 'POST', headers: { authorization: `Bearer ${s.token}` }, body })
  for (const [board, body, status, answer] of [
    ['nope', '{"metadata":{"a":1}}', 400, { code: 3, message: 'proto: (line 1:13): invalid value for string type: {' }],
    ['server', '{"metadata":{"a":1}}', 400, { code: 3, message: 'proto: (line 1:13): invalid value for string type: {' }],
    ['nope', '{"operator":true}', 400, { code: 3, message: 'proto: (line 1:13): invalid value for enum type: true' }],
    ['open', '{"operator":true}', 400, { code: 3, message: 'proto: (line 1:13): invalid value for enum type: true' }],
    ['open', '{"operator":"FOO"}', 400, { code: 3, message: 'proto: (line 1:13): invalid value for enum type: "FOO"' }],
    ['open', '{"operator":"3"}', 400, { code: 3, message: 'proto: (line 1:13): invalid value for enum type: "3"' }],
    ['open', '{"operator":1.5}', 400, { code: 3, message: 'proto: (line 1:13): invalid value for enum type: 1.5' }],
    ['open', '{"operator":2147483648}', 400, { code: 3, message: 'proto: (line 1:13): invalid value for enum type: 2147483648' }],
    ['open', '{"metadata":5,"score":1.5}', 400, { code: 3, message: 'proto: (line 1:13): invalid value for string type: 5' }],
    ['open', '{"score":1.5,"metadata":5}', 400, { code: 3, message: 'proto: (line 1:10): invalid value for int64 type: 1.5' }],
    ['nope', '{"metadata":"[1]"}', 400, { code: 3, message: 'Metadata value must be JSON, if provided.' }],
    ['server', '{"metadata":"[1]"}', 400, { code: 3, message: 'Metadata value must be JSON, if provided.' }],
    ['nope', '{"operator":9}', 404, { code: 5, message: 'Leaderboard not found.' }],
    ['server', '{"operator":9}', 403, { code: 7, message: 'Leaderboard only allows authoritative score submissions.' }],
    ['open', '{"operator":9}', 500, { code: 13, message: 'Error writing score to leaderboard.' }],
    ['open', '{"operator":-1}', 500, { code: 13, message: 'Error writing score to leaderboard.' }],
  ] as const) {
    const res = await write(board, body)
    t.same([res.status, await res.json()], [status, answer], `${board} ${body}`)
  }
  t.equal(nk.leaderboardRecordsList('open', [], 10).records.length, 0, 'nothing was written')
  const score = async (body: string) => ((await (await write('open', body)).json()) as { score?: string }).score
  t.equal(await score('{"score":5,"operator":"SET"}'), '5', 'a name')
  t.equal(await score('{"score":2,"operator":3}'), '7', 'a number: 3 INCREMENT')
  t.equal(await score('{"score":1,"operator":3.0}'), '8', 'an integral number')
  t.equal(await score('{"score":3,"operator":4}'), '5', '4 DECREMENT')
  t.equal(await score('{"score":1,"operator":null}'), '5', 'null is NO_OVERRIDE: the board keeps best')
})

t.test('PUT /v2/account stores avatar_url, lang_tag, location and timezone; GET returns them; update_time moves on a change only (§1.4, §1.5)', async (t) => {
  let clock = Date.parse('2026-01-01T00:00:00Z')
  const fake = await startFakeNakama({ module: null, now: () => clock })
  t.teardown(() => fake.close())
  const s = await (await post(fake, '/v2/account/authenticate/custom?username=quin', { id: 'custom-quin-01' }, basic(fake.serverKey))).json() as { token: string }
  const put = (body: unknown) => fetch(`${fake.url}/v2/account`, { method: 'PUT', headers: { authorization: `Bearer ${s.token}` }, body: JSON.stringify(body) })
  const user = async () => ((await (await fetch(`${fake.url}/v2/account`, { headers: { authorization: `Bearer ${s.token}` } })).json()) as { user: Record<string, unknown> }).user
  let u = await user()
  t.equal(u.lang_tag, 'en', 'a new account: lang_tag en')
  t.notOk('avatar_url' in u || 'location' in u || 'timezone' in u || 'display_name' in u, 'empty columns are left out')
  t.equal(u.update_time, '2026-01-01T00:00:00Z')
  clock += 60_000
  t.equal((await put({ avatar_url: 'https://img.example/q.png', lang_tag: 'fr', location: 'Lyon', timezone: 'Europe/Paris' })).status, 200)
  u = await user()
  t.match(u, { avatar_url: 'https://img.example/q.png', lang_tag: 'fr', location: 'Lyon', timezone: 'Europe/Paris', update_time: '2026-01-01T00:01:00Z' }, 'stored and returned')
  clock += 60_000
  t.equal((await put({ displayName: 'Quin' })).status, 200, 'lowerCamelCase input')
  u = await user()
  t.match(u, { display_name: 'Quin', lang_tag: 'fr', update_time: '2026-01-01T00:02:00Z' }, 'a display_name change alone moves update_time')
  clock += 60_000
  t.equal((await put({ display_name: 'Quin', lang_tag: 'fr', username: 'quin' })).status, 200, 'equal values')
  t.equal((await user()).update_time, '2026-01-01T00:02:00Z', 'are a no-op: update_time stays')
  t.equal((await put({ lang_tag: '', location: '', avatar_url: '' })).status, 200)
  u = await user()
  t.notOk('lang_tag' in u || 'location' in u || 'avatar_url' in u, 'an empty string sets the column to NULL: left out')
  t.match(u, { timezone: 'Europe/Paris', display_name: 'Quin', update_time: '2026-01-01T00:03:00Z' })
})

t.test('custom and device ids: ASCII whitespace and control characters, DEL too, are refused; a Unicode space is not (§1.1)', async (t) => {
  const fake = await startFakeNakama()
  t.teardown(() => fake.close())
  const custom = (id: string) => post(fake, '/v2/account/authenticate/custom', { id }, basic(fake.serverKey))
  const device = (id: string) => post(fake, '/v2/account/authenticate/device', { id }, basic(fake.serverKey))
  for (const id of ['custom\u00a0id01', 'custom\u2003id02']) t.equal((await custom(id)).status, 200, `custom ${JSON.stringify(id)}`)
  t.equal((await device('device\u00a0id-0001')).status, 200, 'device with U+00A0')
  for (const id of ['custom-id\u007f', 'custom id04', 'custom\tid05', 'custom-id\u0000', 'custom\u000bid06']) {
    const res = await custom(id)
    t.same([res.status, await res.json()], [400, { code: 3, message: 'Custom ID invalid, no spaces or control characters allowed.' }], `custom ${JSON.stringify(id)}`)
  }
  const res = await device('device-id-0002\u007f')
  t.same([res.status, await res.json()], [400, { code: 3, message: 'Device ID invalid, no spaces or control characters allowed.' }], 'device with DEL')
})

t.test('query parameters are parsed before the handler: a bad create is 400 for an existing account too; the list limit is checked before the board (§1.1, §1.7)', async (t) => {
  const fake = await startFakeNakama()
  t.teardown(() => fake.close())
  const s = await (await post(fake, '/v2/account/authenticate/custom?username=rae', { id: 'custom-rae-01' }, basic(fake.serverKey))).json() as { token: string }
  for (const path of ['/v2/account/authenticate/custom?create=garbage', '/v2/account/authenticate/custom?create=yes&username=rae']) {
    const res = await post(fake, path, { id: 'custom-rae-01' }, basic(fake.serverKey))
    t.equal(res.status, 400, `${path}: an existing account`)
    t.match(await res.json(), { code: 3, message: /strconv\.ParseBool/ })
  }
  await post(fake, '/v2/account/authenticate/device', { id: 'device-rae-0001' }, basic(fake.serverKey))
  t.equal((await post(fake, '/v2/account/authenticate/device?create=nope', { id: 'device-rae-0001' }, basic(fake.serverKey))).status, 400, 'device: an existing account')
  await post(fake, '/v2/account/authenticate/email', { email: 'rae@mail.example', password: 'password1' }, basic(fake.serverKey))
  t.equal((await post(fake, '/v2/account/authenticate/email?create=nope', { email: 'rae@mail.example', password: 'password1' }, basic(fake.serverKey))).status, 400, 'email: an existing account')
  const get = (path: string) => fetch(`${fake.url}${path}`, { headers: { authorization: `Bearer ${s.token}` } })
  for (const [path, status, body] of [
    ['/v2/leaderboard/nope?limit=0', 400, { code: 3, message: 'Invalid limit - limit must be between 1 and 1000.' }],
    ['/v2/leaderboard/nope?limit=1001', 400, { code: 3, message: 'Invalid limit - limit must be between 1 and 1000.' }],
    ['/v2/leaderboard/nope?limit=0&owner_ids=not-a-uuid', 400, { code: 3, message: 'Invalid limit - limit must be between 1 and 1000.' }],
    ['/v2/leaderboard/nope?owner_ids=not-a-uuid', 400, { code: 3, message: 'One or more owner IDs are invalid.' }],
    ['/v2/leaderboard/nope?limit=5', 404, { code: 5, message: 'Leaderboard not found.' }],
  ] as const) {
    const res = await get(path)
    t.same([res.status, await res.json()], [status, body], path)
  }
})

t.test('runtime calls as the real runtime answers them: an RPC returns a string or nothing, an empty username keeps the stored one, a versioned delete of nothing is refused', async (t) => {
  const fake = await startFakeNakama()
  t.teardown(() => fake.close())
  const nk = fake.runtime.nk
  // RuntimeProviderJS.Rpc: a return that is not a string fails, 13 (HTTP 500).
  fake.runtime.rpcs.set('numeric', () => 42)
  const res = await post(fake, `/v2/rpc/numeric?http_key=${fake.httpKey}&unwrap`, {})
  t.same([res.status, await res.json()], [500, { error: 'Runtime function returned invalid data - only allowed one return value of type string.', message: 'Runtime function returned invalid data - only allowed one return value of type string.', code: 13 }])
  // LeaderboardRecordWrite: '' goes to the query as NULL, and COALESCE keeps the stored name.
  nk.leaderboardCreate('names', false, 'desc', 'best', null, {}, true)
  const owner = '00000000-0000-4000-8000-000000000001'
  nk.leaderboardRecordWrite('names', owner, 'kept', 10)
  t.equal(nk.leaderboardRecordWrite('names', owner, '', 20).username, 'kept')
  // StorageDeleteObjects: with a version, no row deleted is a refusal.
  t.throws(() => nk.storageDelete([{ collection: 'c', key: 'gone', userId: owner, version: 'abc' }]), /Storage delete rejected - not found, version check failed, or permission denied\./)
  t.doesNotThrow(() => nk.storageDelete([{ collection: 'c', key: 'gone', userId: owner }]), 'without a version, deleting nothing is no error')
})

t.test('a banned account: every sign-in path answers 403 code 7 before the password, its tokens end, accountGetId shows disableTime (§1.1-§1.3)', async (t) => {
  const fake = await startFakeNakama()
  t.teardown(() => fake.close())
  const key = basic(fake.serverKey)
  const s = await (await post(fake, '/v2/account/authenticate/email?username=eve', { email: 'eve@users.example', password: 'correct horse' }, key)).json() as { token: string; refresh_token: string }
  const uid = claims(s.token).uid as string
  await post(fake, '/v2/account/authenticate/custom', { id: 'custom-eve01' }, key)
  const nk = fake.runtime.nk
  t.same(Object.keys(nk.accountGetId(uid)).sort(), ['email', 'user', 'wallet'], 'accountToJsObject leaves unset fields out: no disableTime before the ban')
  fake.state.ban(uid)
  t.equal(nk.accountGetId(uid).disableTime, Math.floor(Date.now() / 1000), 'disableTime in unix seconds')
  const banned = { code: 7, message: 'User account banned.' }
  for (const [label, path, body] of [
    ['email, right password', '/v2/account/authenticate/email', { email: 'eve@users.example', password: 'correct horse' }],
    ['email, wrong password', '/v2/account/authenticate/email', { email: 'eve@users.example', password: 'wrong horse' }],
    ['username and password', '/v2/account/authenticate/email?create=false&username=eve', { password: 'wrong horse' }],
  ] as const) {
    const res = await post(fake, path, body, key)
    t.same([res.status, await res.json()], [403, banned], label)
  }
  const other = fake.state.users.get(claims((await (await post(fake, '/v2/account/authenticate/custom', { id: 'custom-eve01' }, key)).json() as { token: string }).token).uid)
  t.ok(other && !other.disableTime, 'another account is not touched')
  const refresh = await post(fake, '/v2/account/session/refresh', { token: s.refresh_token }, key)
  t.same([refresh.status, await refresh.json()], [401, { code: 16, message: 'Refresh token invalid or expired.' }], 'the ban ended the refresh token')
  t.equal((await fetch(`${fake.url}/v2/account`, { headers: { authorization: `Bearer ${s.token}` } })).status, 401, 'and the session token')
  fake.state.unban(uid)
  t.notOk('disableTime' in nk.accountGetId(uid), 'unbanned: no disableTime')
  t.equal((await post(fake, '/v2/account/session/refresh', { token: s.refresh_token }, key)).status, 401, 'lifting the ban brings no token back')
  t.equal((await post(fake, '/v2/account/authenticate/email?create=false&username=eve', { password: 'correct horse' }, key)).status, 200, 'a new sign-in works')
})
