import { createHmac } from 'node:crypto'
import { readFileSync, statSync } from 'node:fs'
import path from 'node:path'
import t from 'tap'
import { setTimeout as sleep } from 'node:timers/promises'
import { Client, startPlatform, tempDir } from './helpers/platform.js'
import { decodeJwt, expectError, signUp, sessionOf } from './helpers/accounts.js'
import { signToken, verifyToken } from '../lib/backend/embedded/tokens.js'
import { HashQueue, hashPassword, verifyPassword } from '../lib/backend/embedded/passwords.js'
import { authRoutes } from '../lib/platform/auth-routes.js'
import { startClockedPlatform } from './helpers/clocked-platform.js'

interface TokenBody {
  success: boolean
  token: string
  refresh_token: string
  user_id: string
  username: string
  expires_at: number
}

/** Verify an HS256 JWT independently of the code under test. */
function signedWith(token: string, key: string): boolean {
  const [header, payload, signature] = token.split('.')
  return createHmac('sha256', key).update(`${header}.${payload}`).digest('base64url') === signature
}

t.test('GET /api/auth/backend-token over HTTP', async (t) => {
  const dataDir = tempDir()
  const platform = await startPlatform({ dataDir })
  t.teardown(() => platform.stop())

  t.test('without a session it is 401 NO_SESSION', async (t) => {
    await expectError(t, await new Client(platform.url).get('/api/auth/backend-token'), 401, 'NO_SESSION')
  })

  t.test('answers spec 2.6 with HS256 JWTs carrying Nakama claims, verifiable with the keys in DATA_DIR', async (t) => {
    const c = new Client(platform.url)
    const user = await signUp(t, c, 'TokenUser')
    const before = Date.now()
    const res = await c.get('/api/auth/backend-token')
    t.equal(res.status, 200)
    t.equal(res.headers.get('cache-control'), 'no-store')
    const body = (await res.json()) as TokenBody
    t.same(Object.keys(body).sort(), ['expires_at', 'refresh_token', 'success', 'token', 'user_id', 'username'])
    t.match(body, { success: true, user_id: user.id, username: 'TokenUser' })
    t.equal(res.headers.getSetCookie().length, 0, 'a fresh token is answered as stored')

    const keyFile = path.join(dataDir, 'secrets', 'token-key')
    const refreshFile = path.join(dataDir, 'secrets', 'refresh-key')
    t.equal(statSync(keyFile).mode & 0o777, 0o600, 'the signing key is mode 0600')
    t.equal(statSync(refreshFile).mode & 0o777, 0o600, 'the refresh key is mode 0600')
    const key = readFileSync(keyFile, 'utf8').trim()
    const refreshKey = readFileSync(refreshFile, 'utf8').trim()
    t.not(key, refreshKey, 'two different keys, as Nakama requires')
    t.ok(signedWith(body.token, key), 'the token verifies with DATA_DIR/secrets/token-key')
    t.ok(signedWith(body.refresh_token, refreshKey), 'the refresh token verifies with DATA_DIR/secrets/refresh-key')
    t.notOk(signedWith(body.refresh_token, key), 'a refresh token is not a session token')

    const token = decodeJwt(body.token)
    const refresh = decodeJwt(body.refresh_token)
    t.same(token.header, { alg: 'HS256', typ: 'JWT' })
    t.same(Object.keys(token.claims).sort(), ['exp', 'iat', 'tid', 'uid', 'usn'])
    t.match(token.claims, { uid: user.id, usn: 'TokenUser', tid: /^[0-9a-f-]{36}$/ })
    t.equal(refresh.claims.tid, token.claims.tid, 'the refresh token shares the tid')
    t.equal(refresh.claims.uid, user.id)
    const iat = token.claims.iat as number
    t.ok(iat >= Math.floor(before / 1000) - 5 && iat <= Date.now() / 1000, 'iat is the sign-in time')
    t.equal(token.claims.exp, iat + 3600, 'the session token lives one hour')
    t.equal(body.expires_at, (token.claims.exp as number) * 1000, 'expires_at is the exp claim in milliseconds')
    t.equal(refresh.claims.exp, iat + 30 * 86400, 'the refresh token lives 30 days')
  })

  t.test('a guest gets a backend token carrying its own id and name', async (t) => {
    const c = new Client(platform.url)
    const guest = (await (await c.post('/api/auth/guest')).json()) as { user: { id: string; username: string } }
    const body = (await (await c.get('/api/auth/backend-token')).json()) as TokenBody
    t.match(body, { success: true, user_id: guest.user.id, username: guest.user.username })
    t.equal(decodeJwt(body.token).claims.usn, guest.user.username)
  })
})

t.test('backend-token refreshes a token with under 5 minutes left (in-process, injected clock)', async (t) => {
  const { client: c, clock } = await startClockedPlatform(t, [authRoutes])
  t.equal((await c.post('/api/auth/guest')).status, 200)
  const first = (await (await c.get('/api/auth/backend-token')).json()) as TokenBody
  t.equal(first.expires_at, Math.floor(clock.now / 1000) * 1000 + 3_600_000)

  clock.now += 54 * 60_000
  const early = await c.get('/api/auth/backend-token')
  t.same(await early.json(), first, '6 minutes left: the stored token is answered')
  t.equal(early.headers.getSetCookie().length, 0)

  clock.now += 2 * 60_000
  const late = await c.get('/api/auth/backend-token')
  const second = (await late.json()) as TokenBody
  t.not(second.token, first.token, '4 minutes left: a new token')
  t.equal(second.expires_at, Math.floor(clock.now / 1000) * 1000 + 3_600_000, 'valid for an hour from now')
  t.equal(decodeJwt(second.token).claims.tid, decodeJwt(first.token).claims.tid, 'the refresh keeps the tid, as Nakama does')
  t.equal(second.user_id, first.user_id)
  t.equal(late.headers.getSetCookie().length, 1, 'the cookie is reset with the new token')
  t.same(await (await c.get('/api/auth/backend-token')).json(), second, 'and the new token is stored')

  clock.now += 30 * 86_400_000
  await expectError(t, await c.get('/api/auth/backend-token'), 401, 'NO_SESSION', 'after 30 days')
  await expectError(t, await c.get('/api/auth/session'), 401, 'NO_SESSION', 'the session is over after 30 days')
  t.ok(sessionOf(c), 'the client still sends its cookie; the server refuses it')
})

t.test('a backend token verifies only unchanged, HS256, unexpired and signed with a listed key', async (t) => {
  const claims = { tid: 't', uid: 'u', usn: 'n', exp: 2_000_000_000, iat: 1_900_000_000 }
  const token = signToken(claims, 'k1')
  t.same(verifyToken(token, ['k1'], 1_950_000_000_000), claims)
  t.same(verifyToken(token, ['k0', 'k1'], 1_950_000_000_000), claims, 'any listed key verifies')
  t.equal(verifyToken(token, ['k2'], 1_950_000_000_000), null, 'another key')
  t.equal(verifyToken(token, ['k1'], 2_000_000_000_000), null, 'expired at exp')
  const [h, p, s] = token.split('.') as [string, string, string]
  const forged = Buffer.from(JSON.stringify({ ...claims, uid: 'admin' })).toString('base64url')
  t.equal(verifyToken(`${h}.${forged}.${s}`, ['k1'], 0), null, 'a changed payload')
  t.equal(verifyToken(`${h}.${p}.${s}!!`, ['k1'], 1_950_000_000_000), null, 'a signature with characters outside base64url')
  t.equal(verifyToken(`${h}.${p}.${s.slice(0, 10)}*${s.slice(10)}`, ['k1'], 1_950_000_000_000), null, 'a character outside base64url inside it')
  const none = Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url')
  t.equal(verifyToken(`${none}.${p}.`, ['k1'], 0), null, 'alg none')
  t.equal(verifyToken(`${h}.${p}`, ['k1'], 0), null, 'two parts')
  t.equal(verifyToken('garbage', ['k1'], 0), null)
  const noExp = signToken({ ...claims, exp: undefined } as unknown as typeof claims, 'k1')
  t.equal(verifyToken(noExp, ['k1'], 0), null, 'exp is required')
})

t.test('HashQueue: `running` tasks at once, `waiting` more in order, then 503 BACKEND_UNAVAILABLE at once', async (t) => {
  const queue = new HashQueue(2, 3)
  let running = 0
  let most = 0
  const started: number[] = []
  const task = (i: number): Promise<number> =>
    queue.run(async () => {
      started.push(i)
      most = Math.max(most, ++running)
      await sleep(20)
      running--
      return i
    })
  const results = await Promise.allSettled([0, 1, 2, 3, 4, 5].map(task))
  t.same(results.slice(0, 5), [0, 1, 2, 3, 4].map((value) => ({ status: 'fulfilled', value })), 'two running and three waiting all run')
  t.match(results[5], { status: 'rejected', reason: { status: 503, code: 'BACKEND_UNAVAILABLE', headers: { 'retry-after': '1' } } }, 'the sixth is refused')
  t.same([most, started], [2, [0, 1, 2, 3, 4]], 'never more than two at once, in the order they came')
  await t.rejects(queue.run(async () => Promise.reject(new Error('scrypt failed'))), /scrypt failed/)
  t.same(await Promise.all([5, 6, 7, 8, 9].map(task)), [5, 6, 7, 8, 9], 'a task that failed gave its place back')
})

t.test('HashQueue: a task whose signal aborts while it waits leaves the line, never runs, and frees its place', async (t) => {
  const queue = new HashQueue(1, 1)
  let release = (): void => {}
  const ran: string[] = []
  const first = queue.run(async () => {
    ran.push('first')
    await new Promise<void>((resolve) => (release = resolve))
    return 'first'
  })
  const gone = new AbortController()
  const waiting = queue.run(async () => ran.push('gone'), gone.signal)
  await t.rejects(queue.run(async () => ran.push('refused')), { status: 503, code: 'BACKEND_UNAVAILABLE' }, 'the one waiting place is taken')
  gone.abort()
  await t.rejects(waiting, { status: 499, code: 'CLIENT_CLOSED' }, 'the task whose client left is refused')
  const stays = new AbortController()
  const next = queue.run(async () => (ran.push('next'), 'next'), stays.signal)
  await t.rejects(queue.run(async () => ran.push('refused')), { status: 503, code: 'BACKEND_UNAVAILABLE' }, 'its place went to the next task, and only one waits')
  const closed = new AbortController()
  closed.abort()
  await t.rejects(queue.run(async () => ran.push('closed'), closed.signal), { status: 499, code: 'CLIENT_CLOSED' }, 'a signal already aborted is refused before the queue is looked at')
  release()
  t.same(await Promise.all([first, next]), ['first', 'next'])
  stays.abort()
  await t.rejects(queue.run(async () => ran.push('closed'), closed.signal), { status: 499, code: 'CLIENT_CLOSED' }, 'and so it is when a place is free')
  t.same(ran, ['first', 'next'], 'neither the task that left nor any refused one ran; an abort once running changes nothing')
  t.same(await queue.run(async () => 'free'), 'free', 'the running place was given back')
})

t.test('a password is stored as scrypt with a salt of its own: the same password twice gives two hashes, each verifying only it', async (t) => {
  const [a, b] = await Promise.all([hashPassword('correct horse'), hashPassword('correct horse')])
  for (const hash of [a, b]) t.match(hash, /^scrypt\$16384\$8\$1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/)
  t.not(a.split('$')[4], b.split('$')[4], 'two salts')
  t.not(a, b, 'two hashes')
  t.equal(await verifyPassword('correct horse', a), true)
  t.equal(await verifyPassword('correct horse', b), true)
  t.equal(await verifyPassword('correct horsf', a), false)
  t.equal(await verifyPassword('correct horse', 'scrypt$16384$8$1$$'), false, 'a malformed hash verifies nothing')
})
