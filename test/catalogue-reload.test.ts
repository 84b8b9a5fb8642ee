import t from 'tap'
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { ROOT, startPlatform, tempDir } from './helpers/platform.js'
import { rawRequest, waitForLog } from './helpers/raw-http.js'

const VALID = path.join(ROOT, 'test/fixtures/catalogue/valid/broken-game.json')

function gameLike(id: string, changes: Record<string, unknown> = {}): string {
  const game = JSON.parse(readFileSync(VALID, 'utf8'))
  return JSON.stringify({ ...game, id, playUrl: `/games/${id}/index.html?embed=1`, leaderboards: { default: `${id}-main`, ids: [`${id}-main`] }, ...changes })
}

t.test('SIGHUP reloads a good change and keeps the old catalogue on a bad one', async (t) => {
  const dir = tempDir()
  copyFileSync(VALID, path.join(dir, 'broken-game.json'))
  const platform = await startPlatform({ env: { MANIFESTS_DIR: dir } })
  t.teardown(() => platform.stop())
  const before = await rawRequest(platform.url, 'GET', '/api/games')
  t.same(JSON.parse(before.body.toString()).games.map((g: { id: string }) => g.id), ['broken-game'])

  writeFileSync(path.join(dir, 'second-game.json'), gameLike('second-game'))
  let mark = platform.logs.length
  platform.child.kill('SIGHUP')
  t.match(await waitForLog(platform.logs, 'catalogue.reloaded', mark), { event: 'catalogue.reloaded', games: 2 })
  const good = await rawRequest(platform.url, 'GET', '/api/games')
  t.same(JSON.parse(good.body.toString()).games.map((g: { id: string }) => g.id), ['broken-game', 'second-game'])
  t.not(good.headers['etag'], before.headers['etag'], 'a new ETag for new bytes')
  t.equal((await rawRequest(platform.url, 'GET', '/api/games', { 'if-none-match': before.headers['etag']! })).status, 200, 'the old tag no longer matches')
  t.equal((await rawRequest(platform.url, 'GET', '/api/games/second-game')).status, 200)

  writeFileSync(path.join(dir, 'third-game.json'), gameLike('third-game', { playerCount: { current: 0, min: 4, max: 2 } }))
  writeFileSync(path.join(dir, 'second-game.json'), gameLike('second-game', { status: 'retired' }))
  mark = platform.logs.length
  platform.child.kill('SIGHUP')
  t.match(await waitForLog(platform.logs, 'catalogue.reload_rejected', mark), { event: 'catalogue.reload_rejected', problems: 2, games: 2 })
  const problems = platform.logs.slice(mark).filter((e) => e.event === 'catalogue.problem').map((e) => e.problem)
  t.strictSame(problems, [
    'second-game.json: $.status: must be one of "available", "beta"',
    'third-game.json: $.playerCount.min: must be <= $.playerCount.max (4 > 2)',
  ])
  const kept = await rawRequest(platform.url, 'GET', '/api/games')
  t.equal(kept.status, 200)
  t.equal(kept.headers['etag'], good.headers['etag'], 'the old catalogue is still served')
  t.same(kept.body, good.body)
  t.equal((await rawRequest(platform.url, 'GET', '/api/games/third-game')).status, 404)
  t.equal(platform.child.exitCode, null, 'still running')
})
