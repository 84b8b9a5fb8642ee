import t from 'tap'
import { Client, runUsersOk, startPlatform, tempDir, testBackendEnv } from './helpers/platform.js'
import { BAD_NAMES, countRows, expectError, sessionOf, signUp, type SessionBody } from './helpers/accounts.js'

const dataDir = tempDir()
const platform = await startPlatform({ dataDir })
t.teardown(() => platform.stop())

const accounts = (): number => countRows(dataDir, 'SELECT count(*) FROM accounts')
// Each test signs in from its own address (the platform trusts X-Forwarded-For from loopback),
// so the failures one test provokes never reach the sign-in limit of another.
let nextAddress = 1
const client = (): Client => {
  const c = new Client(platform.url)
  const address = `198.51.100.${nextAddress++}`
  const request = c.request.bind(c)
  c.request = (method, path, body, headers = {}) => request(method, path, body, { 'x-forwarded-for': address, ...headers })
  return c
}

t.test('POST /api/auth/guest creates a guest account, answers the session body and sets the cookie', async (t) => {
  const c = client()
  const before = accounts()
  const res = await c.post('/api/auth/guest')
  const body = (await res.json()) as SessionBody
  t.equal(res.status, 200)
  t.match(body, { success: true, user: { id: /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, username: /^guest-[0-9a-f]{8}$/ } })
  t.same(Object.keys(body.user).sort(), ['id', 'roles', 'username'])
  t.same(body.user.roles, [])
  t.equal(accounts(), before + 1)
  const session = await c.get('/api/auth/session')
  t.equal(session.status, 200)
  t.same(await session.json(), body, 'GET /api/auth/session answers the same body as the sign-in')
})

t.test('the session cookie is HttpOnly, SameSite=Lax, Path=/, not Secure over http, and lives 30 days', async (t) => {
  const res = await client().post('/api/auth/guest')
  const cookies = res.headers.getSetCookie()
  t.equal(cookies.length, 1)
  const attributes = cookies[0]!.split(';').map((s) => s.trim())
  t.match(attributes[0], /^playfield_session=[A-Za-z0-9_-]{100,}$/)
  t.ok(attributes.includes('HttpOnly'))
  t.ok(attributes.includes('SameSite=Lax'))
  t.ok(attributes.includes('Path=/'))
  t.notOk(attributes.some((a) => /^secure$/i.test(a)), 'no Secure over plain http')
  const maxAge = Number(attributes.find((a) => a.startsWith('Max-Age='))?.slice(8))
  t.ok(maxAge > 30 * 86400 - 60 && maxAge <= 30 * 86400, `Max-Age ${maxAge} is 30 days`)
  t.ok(cookies[0]!.length < 4096, 'fits a browser cookie')
  t.equal(res.headers.get('cache-control'), 'no-store')
})

t.test('guest: an empty JSON object body is accepted; other bodies are refused and create nothing', async (t) => {
  const c = client()
  t.equal((await c.post('/api/auth/guest', {})).status, 200)
  t.equal((await client().post('/api/auth/guest', '{"ignored":1e400}')).status, 200, 'ignored keys may hold any number')
  const before = accounts()
  await expectError(t, await client().post('/api/auth/guest', []), 400, 'VALIDATION_FAILED', 'array body')
  await expectError(t, await client().post('/api/auth/guest', '"x"'), 400, 'VALIDATION_FAILED', 'string body')
  await expectError(t, await client().post('/api/auth/guest', '{"a":'), 400, 'INVALID_JSON', 'broken JSON')
  await expectError(t, await client().post('/api/auth/guest', 'x', { 'content-type': 'text/plain' }), 415, 'UNSUPPORTED_MEDIA_TYPE')
  t.equal(accounts(), before, 'no account was created')
})

t.test('POST /api/auth/register creates an account and signs it in', async (t) => {
  const c = client()
  const res = await c.post('/api/auth/register', { username: 'Reg_User-1', password: 'correct horse' })
  const body = (await res.json()) as SessionBody
  t.equal(res.status, 200)
  t.match(body, { success: true, user: { username: 'Reg_User-1', roles: [] } })
  t.ok(sessionOf(c))
  t.same(await (await c.get('/api/auth/session')).json(), body)
})

t.test('register: a name taken ignoring case is 409 USERNAME_TAKEN and creates nothing', async (t) => {
  await signUp(t, client(), 'TakenName')
  const before = accounts()
  const c = client()
  for (const username of ['TakenName', 'takenname', 'TAKENNAME']) {
    const body = await expectError(t, await c.post('/api/auth/register', { username, password: 'another password' }), 409, 'USERNAME_TAKEN', username)
    t.equal(body.error, `the username ${JSON.stringify(username)} is taken`, 'the same wording on either backend')
  }
  t.equal(accounts(), before)
  t.equal(sessionOf(c), undefined, 'no cookie was set')
})

t.test('register: the password length counts characters (code points), 8 to 256', async (t) => {
  const ok: [string, string][] = [
    ['eight ascii', 'abcdefgh'],
    ['eight emoji (16 UTF-16 units)', '😀'.repeat(8)],
    ['256 characters', 'p'.repeat(256)],
    ['256 emoji', '🎲'.repeat(256)],
  ]
  for (const [label, password] of ok) {
    const username = `pw${nextAddress}`
    const res = await client().post('/api/auth/register', { username, password })
    t.equal(res.status, 200, label)
    t.equal((await client().post('/api/auth/login', { username, password })).status, 200, `${label}: logs in`)
  }
  const before = accounts()
  const bad: [string, string][] = [
    ['7 characters', 'abcdefg'],
    ['7 emoji (14 UTF-16 units)', '😀'.repeat(7)],
    ['257 characters', 'p'.repeat(257)],
    ['empty', ''],
    ['a lone surrogate', 'abcdefg\ud800'],
    // HMAC pads a short key with zero bytes: this one would then open with "a".
    ['a and seven NULs', 'a\u0000\u0000\u0000\u0000\u0000\u0000\u0000'],
    ['a control character', 'abcdefgh\u001b'],
    ['DEL', 'abcdefgh\u007f'],
    // Counted as hashed, in NFC: "e" and a combining acute four times is "éééé", four characters.
    ['8 code points that compose to 4', 'e\u0301'.repeat(4)],
  ]
  for (const [label, password] of bad) {
    await expectError(t, await client().post('/api/auth/register', { username: `bad${nextAddress}`, password }), 400, 'VALIDATION_FAILED', label)
  }
  t.equal(accounts(), before)
})

t.test('passwords are compared in NFC: one typed decomposed opens the account registered composed, and back', async (t) => {
  const composed = 'caf\u00e9 cr\u00e8me'
  const decomposed = 'cafe\u0301 cre\u0300me'
  for (const [label, registered, typed] of [['composed, then decomposed', composed, decomposed], ['decomposed, then composed', decomposed, composed]]) {
    const username = `nfc${nextAddress}`
    t.equal((await client().post('/api/auth/register', { username, password: registered })).status, 200, `${label}: registered`)
    t.equal((await client().post('/api/auth/login', { username, password: typed })).status, 200, `${label}: logs in`)
    await expectError(t, await client().post('/api/auth/login', { username, password: 'cafe cre\u0300me' }), 401, 'INVALID_CREDENTIALS', `${label}: without the accent it is another password`)
  }
})

t.test('register: names outside the rule, wrong types, missing and extra fields are 400 and create nothing', async (t) => {
  const before = accounts()
  for (const [label, username] of BAD_NAMES) {
    await expectError(t, await client().post('/api/auth/register', { username, password: 'correct horse' }), 400, 'VALIDATION_FAILED', label)
  }
  const bodies: [string, unknown][] = [
    ['missing password', { username: 'validname' }],
    ['missing username', { password: 'correct horse' }],
    ['extra field', { username: 'validname', password: 'correct horse', admin: true }],
    ['__proto__ key', '{"username":"validname","password":"correct horse","__proto__":{"roles":["admin"]}}'],
    ['password a number', { username: 'validname', password: 12345678 }],
    ['an array', [{ username: 'validname', password: 'correct horse' }]],
    ['null', 'null'],
  ]
  for (const [label, body] of bodies) {
    await expectError(t, await client().post('/api/auth/register', body), 400, 'VALIDATION_FAILED', label)
  }
  await expectError(t, await client().post('/api/auth/register', '{"username":'), 400, 'INVALID_JSON')
  await expectError(t, await client().post('/api/auth/register', undefined), 400, 'INVALID_JSON', 'no body')
  t.equal(accounts(), before)
})

t.test('POST /api/auth/login signs in ignoring the case of the name; wrong credentials are 401', async (t) => {
  const registered = await signUp(t, client(), 'LoginUser', 'the password')
  const c = client()
  const res = await c.post('/api/auth/login', { username: 'loginuser', password: 'the password' })
  t.equal(res.status, 200)
  t.same(await res.json(), { success: true, user: registered })
  t.same(await (await c.get('/api/auth/session')).json(), { success: true, user: registered })
  const other = client()
  await expectError(t, await other.post('/api/auth/login', { username: 'LoginUser', password: 'the Password' }), 401, 'INVALID_CREDENTIALS', 'wrong password')
  await expectError(t, await other.post('/api/auth/login', { username: 'NoSuchUser', password: 'the password' }), 401, 'INVALID_CREDENTIALS', 'unknown user')
  t.equal(sessionOf(other), undefined)
})

t.test('login answers the roles the account holds, the same body GET /api/auth/session gives', async (t) => {
  const registered = await signUp(t, client(), 'RoleHolder', 'the password')
  t.same(registered.roles, [], 'a new account holds none')
  await runUsersOk({ DATA_DIR: dataDir, ...testBackendEnv(dataDir) }, 'grant', 'RoleHolder', 'developer')
  const c = client()
  const res = await c.post('/api/auth/login', { username: 'RoleHolder', password: 'the password' })
  t.equal(res.status, 200)
  const expected = { success: true, user: { id: registered.id, username: 'RoleHolder', roles: ['developer'] } }
  t.strictSame(await res.json(), expected)
  t.strictSame(await (await c.get('/api/auth/session')).json(), expected)
})

t.test('login: a guest account has no password, so no password signs it in', async (t) => {
  const guest = (await (await client().post('/api/auth/guest')).json()) as SessionBody
  await expectError(t, await client().post('/api/auth/login', { username: guest.user.username, password: 'anything at all' }), 401, 'INVALID_CREDENTIALS')
})

t.test('login: malformed bodies are 400 and do not sign in', async (t) => {
  const c = client()
  await expectError(t, await c.post('/api/auth/login', '{'), 400, 'INVALID_JSON')
  await expectError(t, await c.post('/api/auth/login', { username: 'LoginUser' }), 400, 'VALIDATION_FAILED', 'missing password')
  await expectError(t, await c.post('/api/auth/login', { username: 'LoginUser', password: '' }), 400, 'VALIDATION_FAILED', 'empty password')
  await expectError(t, await c.post('/api/auth/login', { username: 'LoginUser', password: 'p'.repeat(257) }), 400, 'VALIDATION_FAILED', 'password too long')
  await expectError(t, await c.post('/api/auth/login', { username: 'u'.repeat(257), password: 'the password' }), 400, 'VALIDATION_FAILED', 'username too long')
  await expectError(t, await c.post('/api/auth/login', { username: '', password: 'the password' }), 400, 'VALIDATION_FAILED', 'empty username')
  await expectError(t, await c.post('/api/auth/login', { username: 'LoginUser', password: 12345678 }), 400, 'VALIDATION_FAILED', 'password a number')
  await expectError(t, await c.post('/api/auth/login', { username: 'LoginUser', password: 'the password', x: 1 }), 400, 'VALIDATION_FAILED', 'extra field')
  await expectError(t, await c.post('/api/auth/login', '{"username":"LoginUser","password":"the password","__proto__":{}}'), 400, 'VALIDATION_FAILED', '__proto__ key')
  t.equal(sessionOf(c), undefined)
})

t.test('login: a pair no account can have is a wrong credential (401), not a hint of which part is wrong', async (t) => {
  const c = client()
  await expectError(t, await c.post('/api/auth/login', { username: 'LoginUser', password: 'short' }), 401, 'INVALID_CREDENTIALS', 'a password shorter than 8')
  await expectError(t, await c.post('/api/auth/login', { username: 'x', password: 'the password' }), 401, 'INVALID_CREDENTIALS', 'a name outside the rule')
  await expectError(t, await c.post('/api/auth/login', { username: 'u'.repeat(256), password: 'the password' }), 401, 'INVALID_CREDENTIALS', 'a 256-character name')
  await expectError(t, await c.post('/api/auth/login', { username: '__proto__', password: 'the password' }), 401, 'INVALID_CREDENTIALS', '__proto__ as the name')
  await expectError(t, await c.post('/api/auth/login', { username: 'LoginUser\u0000', password: 'the password' }), 401, 'INVALID_CREDENTIALS', 'a control character')
  t.equal(sessionOf(c), undefined)
})

t.test('login: the right password plus trailing NULs or other control characters is a wrong password', async (t) => {
  await signUp(t, client(), 'NulUser', 'password123')
  const c = client()
  for (const password of ['password123\u0000', 'password123\u0000\u0000\u0000', 'password123\n', 'password123\u007f']) {
    await expectError(t, await c.post('/api/auth/login', { username: 'NulUser', password }), 401, 'INVALID_CREDENTIALS', JSON.stringify(password))
  }
  t.equal(sessionOf(c), undefined)
  t.equal((await c.post('/api/auth/login', { username: 'NulUser', password: 'password123' })).status, 200, 'the password itself still signs in')
})

t.test('GET /api/auth/session without a session is 401 NO_SESSION', async (t) => {
  await expectError(t, await client().get('/api/auth/session'), 401, 'NO_SESSION')
})

t.test('logout ends only its own session, clears the cookie, and the old cookie is 401 after', async (t) => {
  const first = client()
  await signUp(t, first, 'TwoDevices')
  const second = client()
  t.equal((await second.post('/api/auth/login', { username: 'TwoDevices', password: 'correct horse' })).status, 200)
  const oldCookie = sessionOf(first)!
  const res = await first.post('/api/auth/logout')
  t.equal(res.status, 200)
  t.same(await res.json(), { success: true })
  t.match(res.headers.getSetCookie()[0], /^playfield_session=; Max-Age=0; Path=\/; Expires=Thu, 01 Jan 1970 00:00:00 GMT; HttpOnly; SameSite=Lax$/)
  t.equal(sessionOf(first), undefined, 'the browser drops the cookie')
  const replay = await client().get('/api/auth/session', { cookie: `playfield_session=${oldCookie}` })
  await expectError(t, replay, 401, 'NO_SESSION', 'the old cookie replayed')
  t.same(replay.headers.getSetCookie(), [], 'a 401 leaves the cookie alone: a sign-in in another tab may just have replaced it')
  const token = await client().get('/api/auth/backend-token', { cookie: `playfield_session=${oldCookie}` })
  await expectError(t, token, 401, 'NO_SESSION', 'backend-token with the old cookie')
  t.same(token.headers.getSetCookie(), [], 'nor does the 401 of backend-token')
  t.equal((await second.get('/api/auth/session')).status, 200, 'the other session lives on')
})

t.test('another cookie of the same name, before or after the session cookie, does not end the session', async (t) => {
  const c = client()
  await signUp(t, c, 'Tossed')
  const cookie = sessionOf(c)!
  for (const header of [`playfield_session=garbage; playfield_session=${cookie}`, `playfield_session=${cookie}; playfield_session=garbage`, `playfield_session=; other=1; playfield_session=${cookie}`]) {
    const res = await client().get('/api/auth/session', { cookie: header })
    t.equal(res.status, 200, header.replace(cookie, '<session>'))
    t.equal(((await res.json()) as { user: { username: string } }).user.username, 'Tossed')
  }
  await expectError(t, await client().get('/api/auth/session', { cookie: 'playfield_session=garbage; playfield_session=also-garbage' }), 401, 'NO_SESSION', 'none opens')
})

t.test('a logged-out session cookie sent before the user\'s own neither ends nor replaces the session', async (t) => {
  const user = client()
  await signUp(t, user, 'Shadowed')
  const own = sessionOf(user)!
  // Another site of the parent domain signs in, logs out, and puts that cookie first (cookie tossing).
  const other = client()
  await other.post('/api/auth/guest')
  const spent = sessionOf(other)!
  t.equal((await other.post('/api/auth/logout')).status, 200)
  await expectError(t, await client().get('/api/auth/session', { cookie: `playfield_session=${spent}` }), 401, 'NO_SESSION', 'the spent cookie alone')
  const both = { cookie: `playfield_session=${spent}; playfield_session=${own}` }
  const res = await client().get('/api/auth/session', both)
  t.equal(res.status, 200)
  t.equal(((await res.json()) as SessionBody).user.username, 'Shadowed')
  t.equal((await client().get('/api/auth/backend-token', both)).status, 200, 'the backend token too')
  t.equal((await client().post('/api/games/neon-nibbler/launch', undefined, both)).status, 200, 'and a launch')
  t.equal((await client().post('/api/auth/logout', undefined, both)).status, 200)
  await expectError(t, await client().get('/api/auth/session', { cookie: `playfield_session=${own}` }), 401, 'NO_SESSION', 'logout ends the live session behind the spent one')
})

t.test('logout without a session answers 200 too; logout refuses a non-object body', async (t) => {
  const res = await client().post('/api/auth/logout')
  t.equal(res.status, 200)
  t.same(await res.json(), { success: true })
  const c = client()
  await c.post('/api/auth/guest')
  await expectError(t, await c.post('/api/auth/logout', '[1]'), 400, 'VALIDATION_FAILED')
  t.equal((await c.get('/api/auth/session')).status, 200, 'a refused logout ends nothing')
})

t.test('a tampered, truncated or garbage cookie is no session', async (t) => {
  const c = client()
  await c.post('/api/auth/guest')
  const good = sessionOf(c)!
  const flip = (s: string, i: number): string => s.slice(0, i) + (s[i] === 'A' ? 'B' : 'A') + s.slice(i + 1)
  const bad: [string, string][] = [
    ['first character changed', flip(good, 0)],
    ['a middle character changed', flip(good, Math.floor(good.length / 2))],
    ['last character changed', flip(good, good.length - 2)],
    ['truncated by one', good.slice(0, -1)],
    ['truncated to half', good.slice(0, good.length / 2)],
    ['garbage', 'not-a-cookie'],
    ['empty', ''],
    ['not base64url', good.replace(/.$/, '!')],
    ['too long', good + 'A'.repeat(5000)],
  ]
  for (const [label, value] of bad) {
    await expectError(t, await client().get('/api/auth/session', { cookie: `playfield_session=${value}` }), 401, 'NO_SESSION', label)
  }
  t.equal((await client().get('/api/auth/session', { cookie: `playfield_session=${good}` })).status, 200, 'the untouched cookie still works')
})

t.test('a state-changing sign-in from a foreign Origin is 403 FORBIDDEN_ORIGIN and creates nothing', async (t) => {
  const before = accounts()
  await expectError(t, await client().post('/api/auth/guest', undefined, { origin: 'https://evil.example' }), 403, 'FORBIDDEN_ORIGIN')
  t.equal(accounts(), before)
})

t.test('after a restart: a logged-out cookie stays refused, a live one still works', async (t) => {
  const live = client()
  await signUp(t, live, 'SurvivesRestart')
  const dead = client()
  await dead.post('/api/auth/guest')
  const deadCookie = sessionOf(dead)!
  await dead.post('/api/auth/logout')
  await platform.stop()
  const again = await startPlatform({ dataDir })
  t.teardown(() => again.stop())
  const liveAgain = new Client(again.url)
  liveAgain.cookies = live.cookies
  const res = await liveAgain.get('/api/auth/session')
  t.equal(res.status, 200)
  t.match(await res.json(), { success: true, user: { username: 'SurvivesRestart' } })
  await expectError(t, await new Client(again.url).get('/api/auth/session', { cookie: `playfield_session=${deadCookie}` }), 401, 'NO_SESSION')
  t.equal((await new Client(again.url).post('/api/auth/login', { username: 'survivesrestart', password: 'correct horse' })).status, 200)
})
