import path from 'node:path'
import Database from 'better-sqlite3'
import t from 'tap'
import { withSession } from '../lib/platform/launch-routes.js'
import { Client, ROOT, startPlatform, tempDir } from './helpers/platform.js'

const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}'

t.test('withSession adds session= to the query and keeps the rest of the play URL as written', async (t) => {
  const cases: [string, string][] = [
    ['/play/gravel-golf', '/play/gravel-golf?session=abc'],
    ['/games/x/index.html?embed=1', '/games/x/index.html?embed=1&session=abc'],
    ['/games/x/index.html?embed=1#start', '/games/x/index.html?embed=1&session=abc#start'],
    ['/games/x/index.html#', '/games/x/index.html?session=abc#'],
    ['/games/x/index.html?', '/games/x/index.html?session=abc'],
    ['/games/x/index.html?embed=1&', '/games/x/index.html?embed=1&session=abc'],
    ['/games/x/index.html?embed=1&level=a%20b&q=c+d', '/games/x/index.html?embed=1&level=a%20b&q=c+d&session=abc'],
    ['/games/x/index.html?embed=1&flag', '/games/x/index.html?embed=1&flag&session=abc'],
    ['/games/x/index.html?path=/x/y&t=~&cb={x}', '/games/x/index.html?path=/x/y&t=~&cb={x}&session=abc'],
    ['/games/x/../x/index.html?a=1&a=2', '/games/x/../x/index.html?a=1&a=2&session=abc'],
    ['https://cdn.example.com/g/?embed=1#top', 'https://cdn.example.com/g/?embed=1&session=abc#top'],
    ['/games/x/index.html?embed=1&session=old&sess%69on=older&sessions=keep#top', '/games/x/index.html?embed=1&sessions=keep&session=abc#top'],
    ['/games/x/index.html?session=old', '/games/x/index.html?session=abc'],
  ]
  for (const [playUrl, expected] of cases) t.equal(withSession(playUrl, 'abc'), expected, playUrl)
  t.equal(withSession('/play/x', 'a b&c'), '/play/x?session=a%20b%26c', 'the id is encoded')
})

t.test('POST /api/games/{id}/launch: 401 without a session, a launch session recorded with one, 404 for an unknown game', async (t) => {
  const dataDir = tempDir()
  const platform = await startPlatform({ dataDir, env: { MANIFESTS_DIR: path.join(ROOT, 'test/fixtures/leaderboards') } })
  t.teardown(() => platform.stop())
  const launches = () => {
    const db = new Database(path.join(dataDir, 'playfield.sqlite'), { readonly: true })
    try {
      return db.prepare('SELECT session_id, game_id, user_id, launched_at FROM launches ORDER BY launched_at, session_id').all() as {
        session_id: string; game_id: string; user_id: string; launched_at: number
      }[]
    } finally {
      db.close()
    }
  }

  const anon = new Client(platform.url)
  const noSession = await anon.post('/api/games/fixture-boards/launch')
  t.equal(noSession.status, 401)
  t.same(await noSession.json(), { error: 'no session', code: 'NO_SESSION' })

  const client = new Client(platform.url)
  const user = ((await (await client.post('/api/auth/guest')).json()) as { user: { id: string } }).user
  const before = Date.now()

  const iframe = await client.post('/api/games/fixture-boards/launch')
  t.equal(iframe.status, 200)
  const a = (await iframe.json()) as { success: boolean; session: { id: string; gameId: string; playUrl: string } }
  t.match(a, { success: true, session: { id: new RegExp(`^${UUID}$`), gameId: 'fixture-boards' } })
  t.same(Object.keys(a.session).sort(), ['gameId', 'id', 'playUrl'])
  t.equal(a.session.playUrl, `/games/fixture-boards/index.html?embed=1&session=${a.session.id}`)

  const native = await client.post('/api/games/fixture-native/launch', {})
  const b = (await native.json()) as { session: { id: string; playUrl: string } }
  t.equal(native.status, 200, 'a beta game launches, with an empty object body')
  t.equal(b.session.playUrl, `/play/fixture-native?session=${b.session.id}`)
  t.not(b.session.id, a.session.id)

  const keysIgnored = await client.post('/api/games/fixture-disabled/launch', { mode: 'solo', x: [1] })
  t.equal(keysIgnored.status, 200, 'object keys are ignored')
  const c = (await keysIgnored.json()) as { session: { id: string } }
  // Numbers no field could keep exactly are refused where a field reads them, not in ignored keys.
  const bigNumbers = await client.post('/api/games/fixture-disabled/launch', '{"x":1e400,"y":123456789012345678901234567890,"z":1e-400}')
  t.equal(bigNumbers.status, 200, 'ignored keys may hold any number')
  const d = (await bigNumbers.json()) as { session: { id: string } }

  const bad: [string, unknown, Record<string, string> | undefined, number, string][] = [
    ['unknown game', undefined, undefined, 404, 'GAME_NOT_FOUND'],
    ['array body', [1], undefined, 400, 'VALIDATION_FAILED'],
    ['string body', '"go"', undefined, 400, 'VALIDATION_FAILED'],
    ['null body', 'null', undefined, 400, 'VALIDATION_FAILED'],
    ['number body', '7', undefined, 400, 'VALIDATION_FAILED'],
    ['malformed body', '{"a":', undefined, 400, 'INVALID_JSON'],
    ['text body', 'hello', { 'content-type': 'text/plain' }, 415, 'UNSUPPORTED_MEDIA_TYPE'],
  ]
  for (const [name, body, headers, status, code] of bad) {
    const url = name === 'unknown game' ? '/api/games/no-such-game/launch' : '/api/games/fixture-boards/launch'
    const res = await client.post(url, body, headers)
    t.equal(res.status, status, name)
    const answer = (await res.json()) as { code: string; details?: unknown }
    t.equal(answer.code, code, name)
    // One detail in the body's own terms, not one per branch of the schema ("must be undefined").
    if (code === 'VALIDATION_FAILED') t.same(answer.details, [{ path: '/', message: 'must be a JSON object, or no body' }], `${name}: details`)
  }

  const rows = launches()
  const byId = (x: string[], y: string[]) => (x[0]! < y[0]! ? -1 : 1)
  t.same(rows.map((r) => [r.session_id, r.game_id, r.user_id]).sort(byId), [
    [a.session.id, 'fixture-boards', user.id],
    [b.session.id, 'fixture-native', user.id],
    [c.session.id, 'fixture-disabled', user.id],
    [d.session.id, 'fixture-disabled', user.id],
  ].sort(byId), 'only the four launches are recorded')
  for (const r of rows) t.ok(r.launched_at >= before && r.launched_at <= Date.now(), 'launch time recorded')
})

t.test('launch floods get 429 with Retry-After, and only accepted launches are recorded', async (t) => {
  const dataDir = tempDir()
  const platform = await startPlatform({ dataDir, env: { MANIFESTS_DIR: path.join(ROOT, 'test/fixtures/leaderboards') } })
  t.teardown(() => platform.stop())
  const client = new Client(platform.url)
  t.equal((await client.post('/api/auth/guest')).status, 200)
  const results = await Promise.all(Array.from({ length: 200 }, () => client.post('/api/games/fixture-boards/launch')))
  const limited = results.filter((r) => r.status === 429)
  const accepted = results.filter((r) => r.status === 200)
  t.ok(limited.length >= 1, `some were limited (${limited.length})`)
  t.ok(accepted.length >= 40, `the burst was accepted (${accepted.length})`)
  t.same(await limited[0]!.json(), { error: 'too many launches', code: 'RATE_LIMITED' })
  t.match(limited[0]!.headers.get('retry-after'), /^[1-9][0-9]*$/)
  const db = new Database(path.join(dataDir, 'playfield.sqlite'), { readonly: true })
  t.teardown(() => db.close())
  t.equal((db.prepare('SELECT count(*) AS n FROM launches').get() as { n: number }).n, accepted.length, 'one row per accepted launch')
  const other = new Client(platform.url)
  t.equal((await other.post('/api/auth/guest')).status, 200)
  t.equal((await other.post('/api/games/fixture-boards/launch')).status, 200, 'another account is not held back')
})
