import t from 'tap'
import { Client, startPlatform } from './helpers/platform.js'
import { nakamaEnv, testNakama } from './fake-nakama/env.js'
import { decodeJwt } from './helpers/accounts.js'

// README: "The session cookie lives as long as the refresh token, so
// session.refresh_token_expiry_sec is the platform's session lifetime." A Nakama whose refresh
// tokens live 2 hours gives 2-hour cookies, not the 30 days of the embedded backend.

const REFRESH_SEC = 7200
const nakama = await testNakama({ session: { refreshTokenExpirySec: REFRESH_SEC } })
t.teardown(() => nakama.fake?.close())
const platform = await startPlatform({ env: nakamaEnv(nakama) })
t.teardown(() => platform.stop())

const maxAgeOf = (res: Response): number => {
  const line = res.headers.getSetCookie().find((l) => l.startsWith('playfield_session='))
  return Number(/;\s*Max-Age=(\d+)/i.exec(line ?? '')?.[1])
}
const expOf = (token: string): number => decodeJwt(token).claims.exp as number

t.test('the session cookie expires with Nakama\'s refresh token', async (t) => {
  const client = new Client(platform.url)
  const before = Math.floor(Date.now() / 1000)
  const res = await client.post('/api/auth/guest')
  const after = Math.ceil(Date.now() / 1000)
  t.equal(res.status, 200)
  const token = (await (await client.get('/api/auth/backend-token')).json()) as { refresh_token: string }
  const exp = expOf(token.refresh_token)
  if (nakama.fake) t.ok(exp - after <= REFRESH_SEC && exp - before >= REFRESH_SEC - 1, 'the fake issued a 2-hour refresh token')
  const maxAge = maxAgeOf(res)
  // Max-Age counts from the answer: between the refresh token's expiry seen from after and from before the sign-in.
  t.ok(maxAge >= exp - after - 1 && maxAge <= exp - before, `Max-Age ${maxAge} ends at the refresh token's exp ${exp} (${before}..${after})`)
  t.ok(maxAge <= REFRESH_SEC || !nakama.fake, 'not the 30 days of the embedded backend')
})
