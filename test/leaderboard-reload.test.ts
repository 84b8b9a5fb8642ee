import { cpSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'
import path from 'node:path'
import t from 'tap'
import Database from 'better-sqlite3'
import { Client, ROOT, startPlatform, tempDir } from './helpers/platform.js'

const FIXTURES = path.join(ROOT, 'test/fixtures/leaderboards')

async function until(check: () => Promise<boolean>): Promise<boolean> {
  for (let i = 0; i < 200; i++) {
    if (await check()) return true
    await sleep(50)
  }
  return false
}

t.test('a catalogue reload (SIGHUP) adds, reconfigures and withdraws leaderboards', async (t) => {
  const manifests = tempDir()
  cpSync(FIXTURES, manifests, { recursive: true })
  const platform = await startPlatform({ env: { MANIFESTS_DIR: manifests } })
  t.teardown(() => platform.stop())
  const players = await Promise.all([0, 1].map(async () => {
    const client = new Client(platform.url)
    const { user } = (await (await client.post('/api/auth/guest')).json()) as { user: { id: string } }
    return { client, id: user.id }
  }))
  for (const [i, p] of players.entries()) {
    t.equal((await p.client.post('/api/leaderboards/submit', { leaderboardId: 'fx-set-desc', score: 10 * (i + 1) })).status, 200)
  }
  const order = async () =>
    ((await (await players[0]!.client.get('/api/leaderboards/fx-set-desc')).json()) as { records: { owner_id: string }[] }).records.map((r) => r.owner_id)
  t.same(await order(), [players[1]!.id, players[0]!.id], 'descending before the reload')
  t.equal((await players[0]!.client.post('/api/leaderboards/submit', { leaderboardId: 'fx-added', score: 1 })).status, 404)

  // fx-set-desc becomes ascending, fx-added appears, the native game's board goes.
  const file = path.join(manifests, 'fixture-boards.json')
  const game = JSON.parse(readFileSync(file, 'utf8'))
  game.leaderboards.configs['fx-set-desc'].sortOrder = 'asc'
  game.leaderboards.ids.push('fx-added')
  game.leaderboards.configs['fx-added'] = { type: 'score' }
  writeFileSync(file, JSON.stringify(game))
  rmSync(path.join(manifests, 'fixture-native.json'))
  platform.child.kill('SIGHUP')

  t.ok(await until(async () => (await players[0]!.client.get('/api/leaderboards/fx-added')).status === 200), 'the added board is served')
  const added = await players[0]!.client.post('/api/leaderboards/submit', { leaderboardId: 'fx-added', score: 5 })
  t.match(await added.json(), { success: true, record: { leaderboard_id: 'fx-added', owner_id: players[0]!.id, score: 5, rank: 1 } })
  t.same(await order(), [players[0]!.id, players[1]!.id], 'the same records, ranked ascending now')
  const gone = await players[0]!.client.get('/api/leaderboards/fx-daily')
  t.equal(gone.status, 404)
  t.same(await gone.json(), { error: 'no leaderboard "fx-daily"', code: 'LEADERBOARD_NOT_FOUND' })
})

t.test('a reload whose boards the database cannot take at once (another process holds its lock) is applied once it can', async (t) => {
  const manifests = tempDir()
  cpSync(FIXTURES, manifests, { recursive: true })
  const dataDir = tempDir()
  const platform = await startPlatform({ dataDir, env: { MANIFESTS_DIR: manifests } })
  t.teardown(() => platform.stop())
  const client = new Client(platform.url)
  t.equal((await client.post('/api/auth/guest')).status, 200)
  const file = path.join(manifests, 'fixture-boards.json')
  const game = JSON.parse(readFileSync(file, 'utf8'))
  game.leaderboards.ids.push('fx-late')
  game.leaderboards.configs['fx-late'] = { type: 'score' }
  writeFileSync(file, JSON.stringify(game))
  // A writer in another process (an operator's sqlite3 session) holds the lock past the 5 s wait.
  const holder = new Database(path.join(dataDir, 'playfield.sqlite'))
  holder.exec('BEGIN IMMEDIATE')
  platform.child.kill('SIGHUP')
  t.ok(await until(async () => platform.logs.some((l) => l.event === 'catalogue.sync_failed')), 'the refused sync is logged')
  // The retries (every 2 s) do not wait for the lock: requests meanwhile are not held 5 s each time.
  let slowest = 0
  for (const stop = Date.now() + 5_000; Date.now() < stop; await sleep(200)) {
    const started = Date.now()
    t.equal((await client.get('/api/games')).status, 200)
    slowest = Math.max(slowest, Date.now() - started)
  }
  t.ok(slowest < 2_000, `no request held while the lock lasts (slowest ${slowest} ms)`)
  t.ok(platform.logs.filter((l) => l.event === 'catalogue.sync_failed').length >= 2, 'retried meanwhile')
  holder.exec('ROLLBACK')
  holder.close()
  t.ok(await until(async () => (await client.get('/api/leaderboards/fx-late')).status === 200), 'the new board is served once the lock is gone')
  const written = await client.post('/api/leaderboards/submit', { leaderboardId: 'fx-late', score: 3 })
  t.match(await written.json(), { success: true, record: { leaderboard_id: 'fx-late', score: 3, rank: 1 } })
})

t.test('a cursor from before a reload reversed the board\'s order is 400, not a page that repeats records', async (t) => {
  const manifests = tempDir()
  cpSync(FIXTURES, manifests, { recursive: true })
  const platform = await startPlatform({ env: { MANIFESTS_DIR: manifests } })
  t.teardown(() => platform.stop())
  for (const score of [10, 20, 30]) {
    const client = new Client(platform.url)
    await client.post('/api/auth/guest')
    t.equal((await client.post('/api/leaderboards/submit', { leaderboardId: 'fx-best-desc', score })).status, 200)
  }
  const anon = new Client(platform.url)
  const first = (await (await anon.get('/api/leaderboards/fx-best-desc?limit=1')).json()) as { records: { score: number }[]; nextCursor: string }
  t.same(first.records.map((r) => r.score), [30], 'the first page, descending')

  const file = path.join(manifests, 'fixture-boards.json')
  const game = JSON.parse(readFileSync(file, 'utf8'))
  game.leaderboards.configs['fx-best-desc'].sortOrder = 'asc'
  writeFileSync(file, JSON.stringify(game))
  platform.child.kill('SIGHUP')
  const ascending = async () => ((await (await anon.get('/api/leaderboards/fx-best-desc')).json()) as { records: { score: number }[] }).records.map((r) => r.score)
  t.ok(await until(async () => (await ascending())[0] === 10), 'the board is ascending now')

  const res = await anon.get(`/api/leaderboards/fx-best-desc?limit=1&cursor=${first.nextCursor}`)
  t.equal(res.status, 400)
  t.strictSame(await res.json(), {
    error: 'cursor belongs to another sort order of the leaderboard',
    code: 'VALIDATION_FAILED',
    details: [{ path: '/cursor', message: 'cursor belongs to another sort order of the leaderboard' }],
  })
})
