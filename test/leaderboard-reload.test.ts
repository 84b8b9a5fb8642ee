import { cpSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import t from 'tap'
import { Client, ROOT, startPlatform, tempDir } from './helpers/platform.js'

const FIXTURES = path.join(ROOT, 'test/fixtures/leaderboards')

async function until(check: () => Promise<boolean>): Promise<boolean> {
  for (let i = 0; i < 200; i++) {
    if (await check()) return true
    await new Promise((resolve) => setTimeout(resolve, 50))
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
