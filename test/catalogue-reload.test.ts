import t from 'tap'
import { setTimeout as sleep } from 'node:timers/promises'
import { spawn } from 'node:child_process'
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
  // The pid to signal is in the listening line (under `npm start` it is not npm's or start.js's).
  const { pid } = platform.logs.find((l) => l.event === 'platform.listening') as { pid: number }
  t.equal(pid, platform.child.pid, 'platform.listening names the process to signal')
  process.kill(pid, 'SIGHUP')
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

t.test('a SIGHUP while bin/platform starts is kept: the process lives, and reloads once it listens', async (t) => {
  // env -u: the test runner adds NODE_OPTIONS to children, whose preload catches SIGHUP first.
  const child = spawn('env', ['-u', 'NODE_OPTIONS', path.join(ROOT, 'bin/platform')], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, PORT: '0', DATA_DIR: tempDir(), MANIFESTS_DIR: path.join(ROOT, 'manifests') },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  t.teardown(() => child.kill('SIGKILL'))
  let stderr = ''
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d))
  const events: string[] = []
  let buffer = ''
  child.stdout!.setEncoding('utf8').on('data', (d: string) => {
    buffer += d
    for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
      events.push(String((JSON.parse(buffer.slice(0, nl)) as { event?: string }).event))
      buffer = buffer.slice(nl + 1)
    }
  })
  // Signal as soon as the process catches SIGHUP (bit 0 of SigCgt): the preloaded handler, before the code loads.
  // (The shell of bin/platform may catch it too, so the process must be node by then.)
  const catchesHup = (): boolean => {
    try {
      const status = readFileSync(`/proc/${child.pid}/status`, 'utf8')
      return /^Name:\s*node$/m.test(status) && (BigInt('0x' + /SigCgt:\s*([0-9a-f]+)/.exec(status)![1]) & 1n) === 1n
    } catch {
      return false
    }
  }
  while (!catchesHup()) await sleep(1)
  t.notOk(events.includes('platform.listening'), 'signalled before the server listens')
  child.kill('SIGHUP')
  for (let i = 0; i < 500 && !events.includes('catalogue.reloaded'); i++) await sleep(20)
  t.same([child.exitCode, child.signalCode], [null, null], 'still running')
  t.equal(stderr, '')
  t.ok(events.indexOf('catalogue.reloaded') > events.indexOf('platform.listening'), 'reloaded once listening')
  t.equal(events.indexOf('platform.listening') >= 0, true)
})
