import t from 'tap'
import { Client, startPlatform, tempDir } from './helpers/platform.js'
import { expectError, sessionOf, signUp } from './helpers/accounts.js'
import { seal, sealKeys, sealReference, unseal, unsealReference, type SessionState } from '../lib/platform/seal.js'

const NOW = 1_800_000_000_000
const state: SessionState = { uid: 'u-1', usn: 'alice', rt: 'r.t.x', t: 't.o.k', te: NOW + 3_600_000, iat: NOW, exp: NOW + 86_400_000 }
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
const OLD = 'old-secret-old-secret-old-secret-0123'
const NEW = 'new-secret-new-secret-new-secret-4567'

t.test('seal/unseal: a round trip, and every kind of damage opens to nothing', async (t) => {
  const keys = sealKeys([NEW])
  const sealed = seal(state, keys)
  t.same(unseal(sealed, keys, NOW), state)
  t.not(seal(state, keys), sealed, 'a fresh IV each time')
  t.notOk(sealed.includes('alice'), 'the contents are encrypted')
  let opened = 0
  for (let i = 0; i < sealed.length; i++) {
    // Both neighbours of each character, so the spare low bits of the last one are changed too.
    for (const delta of [1, -1]) {
      const c = ALPHABET[(ALPHABET.indexOf(sealed[i]!) + delta + 64) % 64]!
      if (unseal(sealed.slice(0, i) + c + sealed.slice(i + 1), keys, NOW) !== null) opened++
    }
  }
  t.equal(opened, 0, 'no single changed character opens')
  for (const length of [0, 1, 16, 38, sealed.length - 1]) t.equal(unseal(sealed.slice(0, length), keys, NOW), null, `truncated to ${length}`)
  t.equal(unseal(sealed + 'AAAA', keys, NOW), null, 'extended')
  t.equal(unseal('%%%', keys, NOW), null, 'not base64url')
  t.equal(unseal(sealed, keys, state.exp), null, 'expired at exp')
  t.same(unseal(sealed, keys, state.exp - 1), state, 'valid until then')
})

t.test('seal/unseal: key rotation (first key seals, all open) and retired keys', async (t) => {
  const old = seal(state, sealKeys([OLD]))
  t.equal(unseal(old, sealKeys([NEW]), NOW), null, 'a retired key no longer opens')
  t.same(unseal(old, sealKeys([NEW, OLD]), NOW), state, 'an old key still listed opens')
  const rotated = seal(state, sealKeys([NEW, OLD]))
  t.same(unseal(rotated, sealKeys([NEW]), NOW), state, 'the first key sealed it')
  t.equal(unseal(rotated, sealKeys([OLD]), NOW), null)
})

t.test('seal/unseal: a well-sealed value of the wrong shape is refused', async (t) => {
  const keys = sealKeys([NEW])
  const wrong = { ...state, exp: 'later' } as unknown as SessionState
  t.equal(unseal(seal(wrong, keys), keys, NOW), null)
})

t.test("a terminal ticket's session reference: a round trip, and neither it nor a cookie opens as the other", async (t) => {
  const keys = sealKeys([NEW, OLD])
  const reference = sealReference({ uid: 'u-1', rt: 'r.t.x' }, keys)
  t.same(unsealReference(reference, keys), { uid: 'u-1', rt: 'r.t.x' })
  t.same(unsealReference(reference, sealKeys([NEW])), { uid: 'u-1', rt: 'r.t.x' }, 'sealed with the first key')
  t.equal(unsealReference(reference, sealKeys([OLD])), null, 'not with another')
  t.equal(unsealReference(reference.slice(0, -2), keys), null, 'cut short')
  t.notMatch(Buffer.from(reference, 'base64url').toString('latin1'), /r\.t\.x/, 'the refresh token is not readable in it')
  // Same keys, another use: a reference the page saw in a ticket is no cookie, and a cookie no reference.
  t.equal(unseal(reference, keys, NOW), null, 'a reference is not a session cookie')
  t.equal(unsealReference(seal(state, keys), keys), null, 'a session cookie is not a reference')
})

t.test('SESSION_SECRET rotation over HTTP: "new,old" keeps old cookies; dropping old ends them', async (t) => {
  const dataDir = tempDir()
  const first = await startPlatform({ dataDir, env: { SESSION_SECRET: OLD } })
  const c = new Client(first.url)
  const user = await signUp(t, c, 'Rotator')
  const oldCookie = sessionOf(c)!
  await first.stop()

  const rotated = await startPlatform({ dataDir, env: { SESSION_SECRET: `${NEW},${OLD}` } })
  const again = new Client(rotated.url)
  again.cookies = c.cookies
  const res = await again.get('/api/auth/session')
  t.equal(res.status, 200, 'the old cookie opens under "new,old"')
  t.same(await res.json(), { success: true, user })
  const renamed = await again.put('/api/user/username', { username: 'Rotated' })
  t.equal(renamed.status, 200)
  const newCookie = sessionOf(again)!
  t.not(newCookie, oldCookie, 'the rename re-sealed the cookie, with the new key')
  await rotated.stop()

  const retired = await startPlatform({ dataDir, env: { SESSION_SECRET: NEW } })
  t.teardown(() => retired.stop())
  const fresh = (cookie: string): Promise<Response> => new Client(retired.url).get('/api/auth/session', { cookie: `playfield_session=${cookie}` })
  await expectError(t, await fresh(oldCookie), 401, 'NO_SESSION', 'sealed with the retired key')
  t.equal((await fresh(newCookie)).status, 200, 'sealed with the new key')
})

t.test('a cookie resealed with another account\'s id is refused: the refresh token it holds is not that account\'s', async (t) => {
  // What a leaked SESSION_SECRET (or a retired key still listed) gives: any cookie can be resealed.
  const platform = await startPlatform({ env: { SESSION_SECRET: NEW } })
  t.teardown(() => platform.stop())
  const victim = await signUp(t, new Client(platform.url), 'Victim1')
  const attacker = new Client(platform.url)
  await signUp(t, attacker, 'Attacker1')
  const keys = sealKeys([NEW])
  const own = unseal(sessionOf(attacker)!, keys, Date.now())!
  const forged = seal({ ...own, uid: victim.id, usn: victim.username }, keys)
  const as = new Client(platform.url)
  as.cookies.set('playfield_session', forged)
  await expectError(t, await as.get('/api/auth/session'), 401, 'NO_SESSION', 'no session as the victim')
  await expectError(t, await as.post('/api/leaderboards/submit', { leaderboardId: 'lantern-drift-score', score: 1 }), 401, 'NO_SESSION', 'no write in the victim\'s name')
  t.equal((await attacker.get('/api/auth/session')).status, 200, 'the attacker\'s own cookie still works')
})

t.test('the cookie is Secure when the platform origin is https', async (t) => {
  const platform = await startPlatform({ env: { PLATFORM_ORIGINS: 'https://play.example.com,http://127.0.0.1:3000' } })
  t.teardown(() => platform.stop())
  const secure = (res: Response): boolean => /;\s*Secure(;|$)/i.test(res.headers.getSetCookie()[0] ?? '')
  t.ok(secure(await new Client(platform.url, 'https://play.example.com').post('/api/auth/guest')), 'Origin is an https platform origin')
  t.ok(secure(await new Client(platform.url).post('/api/auth/guest', undefined, { 'x-forwarded-proto': 'https' })), 'a trusted proxy says https')
  t.ok(secure(await new Client(platform.url).post('/api/auth/guest', undefined, { 'x-forwarded-proto': 'HTTPS' })), 'in any case')
  t.notOk(secure(await new Client(platform.url, 'http://127.0.0.1:3000').post('/api/auth/guest')), 'plain http origin')
  const allHttps = await startPlatform({ env: { PLATFORM_ORIGINS: 'https://play.example.com' } })
  t.teardown(() => allHttps.stop())
  t.ok(secure(await new Client(allHttps.url).post('/api/auth/guest')), 'every platform origin is https')
  const logout = await new Client(platform.url, 'https://play.example.com').post('/api/auth/logout')
  t.ok(secure(logout), 'the clearing cookie carries the same attributes')
})
