import { readdirSync, readFileSync } from 'node:fs'
import net from 'node:net'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import Database from 'better-sqlite3'
import { ACCOUNT_MIGRATIONS, AccountStore } from '../lib/backend/embedded/accounts.js'
import { openDatabase } from '../lib/backend/embedded/db.js'
import { createEmbeddedBackend } from '../lib/backend/embedded/index.js'
import { loadPlatformConfig } from '../lib/config.js'
import { RENAME_RULE } from '../lib/limiter.js'
import { countRows, readRow } from './helpers/accounts.js'
import { startPlatform, tempDir } from './helpers/platform.js'

const NOW = Date.parse('2026-11-22T12:00:00Z')

t.test('a rename whose transaction fails after the account changed leaves the name and the rename bucket as they were', async (t) => {
  const dataDir = tempDir()
  const db = openDatabase(dataDir, ACCOUNT_MIGRATIONS)
  t.teardown(() => db.close())
  const store = new AccountStore(db, loadPlatformConfig({ DATA_DIR: dataDir }))
  const { userId } = await store.register('before', 'correct horse')
  // The leaderboards' part of the rename (renameOwner) fails: a full disk, a constraint.
  store.onRenamed = () => {
    throw new Error('the records could not be renamed')
  }
  await t.rejects(store.renameUser(userId, 'after', RENAME_RULE, NOW), /the records could not be renamed/)
  t.equal((await store.getAccount(userId))?.username, 'before', 'the account keeps its name')
  t.equal(db.prepare('SELECT count(*) FROM buckets').pluck().get(), 0, 'no token was spent')
  store.onRenamed = () => () => {}
  for (const name of ['after1', 'after2', 'after3']) t.equal((await store.renameUser(userId, name, RENAME_RULE, NOW)).username, name)
  await t.rejects(store.renameUser(userId, 'after4', RENAME_RULE, NOW), { code: 'RATE_LIMITED' }, 'three, as for an account that never failed')
})

t.test('a migration that fails part-way leaves nothing of itself: no table, no schema_migrations row', async (t) => {
  const dataDir = tempDir()
  const broken = [{ version: 900, name: 'two tables, the second a mistake', sql: 'CREATE TABLE first_half (x); CREATE TABLE first_half (y);' }]
  t.throws(() => openDatabase(dataDir, broken), /already exists/)
  const db = new Database(path.join(dataDir, 'playfield.sqlite'), { readonly: true })
  t.teardown(() => db.close())
  t.equal(db.prepare("SELECT count(*) FROM sqlite_schema WHERE name = 'first_half'").pluck().get(), 0, 'the first statement is rolled back')
  t.equal(db.prepare('SELECT count(*) FROM schema_migrations WHERE version = 900').pluck().get(), 0, 'not recorded as applied')
})

t.test('a rename in one process between another process\'s decision on a score and its commit: the record is stored under the new name', async (t) => {
  // Two backends on one file are two platform processes: each has its own connection and memory.
  const dataDir = tempDir()
  const config = loadPlatformConfig({ DATA_DIR: dataDir })
  const scorer = createEmbeddedBackend(config)
  const renamer = createEmbeddedBackend(config)
  const board = { id: 'rune-best', operator: 'best', sortOrder: 'desc', resetSchedule: null, authoritative: false } as const
  for (const backend of [scorer, renamer]) await backend.syncLeaderboards([board])
  const { userId } = await scorer.register('race_old', 'correct horse')
  // writeRecord decides at once and commits on the next turn; the rename commits in between.
  const first = scorer.writeRecord({ leaderboardId: 'rune-best', ownerId: userId, username: 'race_old', score: 10, subscore: 0 }, NOW)
  await renamer.renameUser(userId, 'race_mid', RENAME_RULE, NOW)
  await first
  const second = scorer.writeRecord({ leaderboardId: 'rune-best', ownerId: userId, username: 'race_mid', score: 20, subscore: 0 }, NOW)
  await renamer.renameUser(userId, 'race_new', RENAME_RULE, NOW)
  await second
  await scorer.close()
  await renamer.close()
  // The old names are free: whoever takes one must never see it on this player's score.
  const platform = await startPlatform({ dataDir })
  t.teardown(() => platform.stop())
  const res = await fetch(`${platform.url}/api/leaderboards/rune-best`)
  t.equal(res.status, 200)
  t.same(await res.json(), {
    success: true,
    records: [{ owner_id: userId, username: 'race_new', score: 20, subscore: 0, rank: 1 }],
    nextCursor: null,
    ownRecord: null,
  })
})

t.test('a register stores the password only as a salted scrypt hash: scrypt$16384$8$1$<salt>$<key>, and its text is in no database file', async (t) => {
  const dataDir = tempDir()
  const platform = await startPlatform({ dataDir })
  t.teardown(() => platform.stop())
  const password = 'plain-text-9f2c41d7-never-stored'
  const res = await fetch(`${platform.url}/api/auth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'hash_check', password }) })
  t.equal(res.status, 200, 'registered')
  t.match(readRow(dataDir, 'SELECT password_hash FROM accounts WHERE username = ?', 'hash_check'), { password_hash: /^scrypt\$16384\$8\$1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/ },
    'N, r and p, then a 16-byte salt and a 32-byte key in base64url')
  const files = readdirSync(dataDir).filter((name) => /^playfield\.sqlite(-wal|-shm)?$/.test(name))
  t.ok(files.includes('playfield.sqlite'), `the database files: ${files.join(', ')}`)
  for (const name of files) t.notOk(readFileSync(path.join(dataDir, name)).includes(password), `${name} does not hold the password`)
})

t.test('an account registered before register refused control characters still signs in with its password after an upgrade', async (t) => {
  // Register took a tab in a password until 2026-11-21 (06d2902): such an account, written as that
  // version wrote it (the backend hashes what the route passes), then the platform of today.
  const dataDir = tempDir()
  const old = createEmbeddedBackend(loadPlatformConfig({ DATA_DIR: dataDir }))
  await old.register('tab_user', 'tab\there-password')
  await old.register('nul_user', 'a-password\u0000in-it')
  // Past HMAC's 64-byte block the key is hashed, not padded: a trailing NUL is the password's own.
  const long = `${'long-password-'.repeat(5)}\u0000`
  await old.register('long_user', long)
  await old.close()
  const platform = await startPlatform({ dataDir })
  t.teardown(() => platform.stop())
  const login = (username: string, password: string): Promise<Response> =>
    fetch(`${platform.url}/api/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username, password }) })
  const res = await login('tab_user', 'tab\there-password')
  t.equal(res.status, 200, 'the tab password signs in')
  t.match(await res.json(), { success: true, user: { username: 'tab_user' } })
  t.equal((await login('nul_user', 'a-password\u0000in-it')).status, 200, 'so does one with a NUL inside it')
  t.equal((await login('long_user', long)).status, 200, 'and one of 71 bytes ending in NUL')
  t.equal((await login('long_user', long.slice(0, -1))).status, 401, 'which the same without the NUL does not open')
  // What would open an account under another spelling stays a wrong password, without the hash.
  t.equal((await login('tab_user', 'tab\there-password\u0000')).status, 401, 'a trailing NUL (HMAC pads the key with NULs)')
  t.equal((await login('tab_user', 'tab here-password')).status, 401, 'a space for the tab')
})

t.test('a sign-in whose client left while its password hash waited for its turn is not run: no account, no failure', async (t) => {
  const dataDir = tempDir()
  const platform = await startPlatform({ dataDir })
  t.teardown(() => platform.stop())
  const port = Number(new URL(platform.url).port)
  /** A request on a connection of its own; its answer's status line, or '' when `leave` cut it first. */
  const send = (path: string, fields: object, leave?: Promise<unknown>): Promise<{ sent: Promise<void>; status: Promise<string> }> =>
    new Promise((connected) => {
      const body = JSON.stringify(fields)
      const socket = net.connect(port, '127.0.0.1', () => {
        const sent = new Promise<void>((resolve) =>
          socket.write(`POST ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`, () => resolve()),
        )
        let answer = ''
        socket.setEncoding('utf8').on('data', (d: string) => (answer += d))
        const status = new Promise<string>((resolve) => socket.on('close', () => resolve(answer.split('\r\n')[0]!)))
        void leave?.then(() => socket.destroy())
        connected({ sent, status })
      })
    })
  /** `leaving` sent behind 30 registers (hashes two at a time: several hundred milliseconds), its client gone 150 ms later. */
  const behindThirty = async (round: string, path: string, fields: object): Promise<void> => {
    const ahead = await Promise.all(Array.from({ length: 30 }, (_, i) => send('/api/auth/register', { username: `${round}_${i}`, password: 'correct horse' })))
    await Promise.all(ahead.map((r) => r.sent))
    await sleep(300)
    const leaving = await send(path, fields, sleep(150))
    t.equal(await leaving.status, '', `${path}: the client left before any answer`)
    t.same(await Promise.all(ahead.map((r) => r.status)), Array(30).fill('HTTP/1.1 200 OK'), 'the clients that stayed are all registered')
  }
  await behindThirty('first', '/api/auth/register', { username: 'left_early', password: 'correct horse' })
  const again = await fetch(`${platform.url}/api/auth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'left_early', password: 'correct horse' }) })
  t.equal(again.status, 200, 'the name is free: the abandoned register created no account')
  t.match(await again.json(), { success: true, user: { username: 'left_early' } })
  await behindThirty('second', '/api/auth/login', { username: 'first_0', password: 'a wrong password' })
  t.equal(countRows(dataDir, 'SELECT count(*) FROM event_windows'), 0, 'the abandoned wrong login was not checked, so no failure was counted')
  const statuses = platform.logs.filter((l) => l.event === 'http.request' && l.status === 499).map((l) => l.path)
  t.same(statuses, ['/api/auth/register', '/api/auth/login'], 'the access log gives each abandoned request 499')
  t.notOk(platform.logs.some((l) => l.event === 'http.error'), 'and no error is logged for them')
})

// The sign-in limit's failures (CONTRACT §2: 429 "until the minute has passed"): an event counts
// for exactly windowMs after it, and a window keeps only its latest `keep` events.
t.test('an event window counts an event for windowMs and not a millisecond longer, and keeps the latest `keep`', async (t) => {
  const dataDir = tempDir()
  const db = openDatabase(dataDir, ACCOUNT_MIGRATIONS)
  t.teardown(() => db.close())
  const store = new AccountStore(db, loadPlatformConfig({ DATA_DIR: dataDir }))
  const MINUTE = 60_000
  t.same(await store.eventWindow('signin:k', NOW, MINUTE, { keep: 2 }), [NOW])
  t.same(await store.eventWindow('signin:k', NOW + 1, MINUTE, { keep: 2 }), [NOW, NOW + 1])
  t.same(await store.eventWindow('signin:k', NOW + 2, MINUTE, { keep: 2 }), [NOW + 1, NOW + 2], 'the latest two')
  t.same(await store.eventWindow('signin:k', NOW + 2, MINUTE), [NOW + 1, NOW + 2], 'as stored')
  t.same(await store.eventWindow('signin:k', NOW + 1 + MINUTE - 1, MINUTE), [NOW + 1, NOW + 2], 'the last millisecond of the first one\'s minute')
  t.same(await store.eventWindow('signin:k', NOW + 1 + MINUTE, MINUTE), [NOW + 2], 'its minute has passed')
  // The clock stepped back an hour: events stamped ahead by more than the window neither count nor
  // crowd out new ones; those ahead by less (another instance's clock) still count.
  const BACK = NOW - 3_600_000
  t.same(await store.eventWindow('signin:k', BACK, MINUTE), [], 'an hour ahead: not counted')
  t.same(await store.eventWindow('signin:k', BACK, MINUTE, { keep: 2 }), [BACK], 'and not kept over a new one')
  t.same(await store.eventWindow('signin:k', BACK - MINUTE, MINUTE), [BACK], 'a minute ahead: counted')
})

t.test('a logout deletes the revocations whose tokens have all expired, not only a restart: 30 days after it, once an hour', async (t) => {
  const dataDir = tempDir()
  const db = openDatabase(dataDir, ACCOUNT_MIGRATIONS)
  t.teardown(() => db.close())
  let now = NOW
  const store = new AccountStore(db, loadPlatformConfig({ DATA_DIR: dataDir }), () => now)
  const rows = () => db.prepare('SELECT revoked_at FROM revoked_sessions ORDER BY revoked_at').pluck().all()
  const DAY = 86_400_000
  await store.logout(await store.register('early', 'correct horse'))
  now = NOW + 29 * DAY
  await store.logout(await store.register('later', 'correct horse'))
  t.same(rows(), [NOW, NOW + 29 * DAY], 'both kept while a token of either can still be alive')
  now = NOW + 30 * DAY + 1
  const last = await store.register('last', 'correct horse')
  await store.logout(last)
  t.same(rows(), [NOW + 29 * DAY, NOW + 30 * DAY + 1], "the first one's tokens have all expired: its row is gone")
  await t.rejects(store.refresh(last.refreshToken), 'the revocations kept still hold')
})

t.test('a logout in one process ends the session in another on the same file at once, though that one had already seen it active', async (t) => {
  // Two backends on one file are two platform processes; each keeps revocations it has seen in memory.
  const config = loadPlatformConfig({ DATA_DIR: tempDir() })
  const a = createEmbeddedBackend(config)
  const b = createEmbeddedBackend(config)
  t.teardown(async () => {
    await a.close()
    await b.close()
  })
  const session = await a.register('two_procs', 'correct horse')
  t.equal(await b.sessionActive(session.refreshToken, session.userId), true)
  await a.logout(session)
  t.equal(await b.sessionActive(session.refreshToken, session.userId), false, 'read from the file, not from memory')
  await t.rejects(b.refresh(session.refreshToken), { code: 'NO_SESSION' })
  t.equal(await a.sessionActive(session.refreshToken, session.userId), false)
})

t.test("a session has ended (an open terminal's check) once logged out, refreshed or not, and only for its own user", async (t) => {
  const b = createEmbeddedBackend(loadPlatformConfig({ DATA_DIR: tempDir() }))
  t.teardown(() => b.close())
  const first = await b.register('ended_one', 'correct horse')
  const other = await b.register('ended_two', 'correct horse')
  t.equal(await b.sessionEnded(first.refreshToken, first.userId), false, 'a fresh session')
  t.equal(await b.sessionEnded(first.refreshToken, other.userId), true, "another user's refresh token")
  t.equal(await b.sessionEnded('x.y.z', first.userId), true, 'no token')
  // A terminal's ticket keeps the refresh token of its minting; the cookie moves on to refreshed ones.
  const refreshed = await b.refresh(first.refreshToken)
  t.equal(await b.sessionEnded(first.refreshToken, first.userId), false, 'the token before a refresh: the same session')
  await b.logout(refreshed)
  t.equal(await b.sessionEnded(first.refreshToken, first.userId), true, 'the logout of the refreshed token ends it')
  t.equal(await b.sessionEnded(other.refreshToken, other.userId), false, 'and no other session')
})
