import t from 'tap'
import { startFakeNakama, type FakeNakama } from './fake-nakama/server.js'

// Found by an audit against Nakama's source: LocalSessionCache (server/session_cache.go) keeps the
// logged-out session tokens and refresh tokens apart (sessionTokens, refreshTokens): Remove puts a
// token id only in the map of the token it was given, IsValidSession reads only sessionTokens and
// IsValidRefresh only refreshTokens. So a logout given only the refresh token leaves the session
// tokens of that login valid at Nakama (README: "Nakama's own API still takes session tokens of
// that login minted earlier until they expire"), and one given only the session token leaves its
// refresh token valid. The runtime's sessionLogout (server/runtime_javascript_nakama.go) wraps
// core_session.go's errors: "failed to logout: session token invalid".

const basic = (key: string) => `Basic ${Buffer.from(`${key}:`).toString('base64')}`
const claims = (token: string) => JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString())

async function signIn(fake: FakeNakama, id: string) {
  const res = await fetch(`${fake.url}/v2/account/authenticate/custom?username=${id}`, { method: 'POST', headers: { authorization: basic(fake.serverKey) }, body: JSON.stringify({ id: `custom-${id}` }) })
  return (await res.json()) as { token: string; refresh_token: string }
}
const account = (fake: FakeNakama, token: string) => fetch(`${fake.url}/v2/account`, { headers: { authorization: `Bearer ${token}` } }).then((r) => r.status)
const refresh = (fake: FakeNakama, token: string) =>
  fetch(`${fake.url}/v2/account/session/refresh`, { method: 'POST', headers: { authorization: basic(fake.serverKey) }, body: JSON.stringify({ token }) }).then((r) => r.status)

t.test('runtime sessionLogout with the refresh token only: the refresh token ends, the session tokens of that login stay valid', async (t) => {
  const fake = await startFakeNakama()
  t.teardown(() => fake.close())
  const s = await signIn(fake, 'rita')
  fake.runtime.nk.sessionLogout(claims(s.token).uid, undefined, s.refresh_token)
  t.equal(await refresh(fake, s.refresh_token), 401, 'IsValidRefresh: the refresh token id is in refreshTokens')
  t.equal(await account(fake, s.token), 200, 'IsValidSession reads sessionTokens only, where nothing was put')
})

t.test('REST logout with the session token only: the session token ends, its refresh token stays valid', async (t) => {
  const fake = await startFakeNakama()
  t.teardown(() => fake.close())
  const s = await signIn(fake, 'sam')
  const out = await fetch(`${fake.url}/v2/session/logout`, { method: 'POST', headers: { authorization: `Bearer ${s.token}` }, body: JSON.stringify({ token: s.token }) })
  t.equal(out.status, 200)
  t.equal(await account(fake, s.token), 401)
  t.equal(await refresh(fake, s.refresh_token), 200, 'the refresh token was not given, so it was not invalidated')
})

t.test('logout with both tokens, or with neither, still ends both', async (t) => {
  const fake = await startFakeNakama()
  t.teardown(() => fake.close())
  const a = await signIn(fake, 'tess')
  fake.runtime.nk.sessionLogout(claims(a.token).uid, a.token, a.refresh_token)
  t.same([await account(fake, a.token), await refresh(fake, a.refresh_token)], [401, 401], 'both given')
  const b = await signIn(fake, 'uma')
  fake.runtime.nk.sessionLogout(claims(b.token).uid)
  t.same([await account(fake, b.token), await refresh(fake, b.refresh_token)], [401, 401], 'neither given: RemoveAll')
})

t.test("runtime sessionLogout's refusals carry the runtime's wording", async (t) => {
  const fake = await startFakeNakama()
  t.teardown(() => fake.close())
  const s = await signIn(fake, 'vic')
  const other = await signIn(fake, 'wen')
  const uid = claims(s.token).uid as string
  t.throws(() => fake.runtime.nk.sessionLogout(uid, other.token, s.refresh_token), { message: 'failed to logout: session token invalid' })
  t.throws(() => fake.runtime.nk.sessionLogout(uid, undefined, other.refresh_token), { message: 'failed to logout: refresh token invalid' })
})
