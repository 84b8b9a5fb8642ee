import t from 'tap'
import { setTimeout as sleep } from 'node:timers/promises'
import { execFileSync, spawnSync } from 'node:child_process'
import { copyFileSync, mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import path from 'node:path'
import { brotliDecompressSync, gunzipSync } from 'node:zlib'
import { Cron } from 'croner'
import { Client, PLATFORM_JS, ROOT, startPlatform, tempDir, type RunningProcess } from './helpers/platform.js'
import { rawRequest, type RawResponse } from './helpers/raw-http.js'

const MANIFESTS = path.join(ROOT, 'manifests')
const CAPTURE_FIXTURE = path.join(ROOT, 'test/fixtures/screenshots/good/games/broken-game')

/** CONTRACT §5 applied by hand to every board of manifests/: [operator, sortOrder, resetSchedule, authoritative]. */
const RESOLVED: Record<string, [string, string, string | null, boolean]> = {
  'lantern-lap-time': ['best', 'asc', '0 0 * * 1', false], // time_best: asc
  'lantern-drift-score': ['best', 'desc', null, false], // high_score, "descending"
  'mossback-elo': ['set', 'desc', null, true], // elo
  'mossback-wins': ['incr', 'desc', '0 0 1 * *', false], // wins
  'tidepool-moves': ['best', 'asc', null, false], // "ascending"
  'cinder-wealth': ['set', 'desc', '0 0 1 * *', false],
  'cinder-hashrate': ['set', 'desc', null, false], // hashrate
  'hollow-runs': ['best', 'desc', '0 12 * * 5', true], // coop_pve_run: best
  'skyline-kills': ['incr', 'desc', '0 0 * * *', false], // kills
  'skyline-record': ['incr', 'desc', null, false], // win_loss
  'pebble-rating': ['set', 'desc', null, false], // rating
  'pebble-mastery': ['set', 'desc', '30 4 * * 1-5', false], // mastery
  'gravel-strokes': ['best', 'asc', null, false], // score, "asc"
  'gravel-holes': ['incr', 'desc', null, false], // incr
  'neon-highest': ['best', 'desc', null, false], // highest_score
  'neon-last-run': ['set', 'desc', null, false], // set
  'arcade-weekly': ['best', 'desc', '0 0 * * 0', false], // score, shared by two games
  'rune-best': ['best', 'desc', null, false], // best
}

function manifests(): Record<string, Record<string, unknown>> {
  const out: Record<string, Record<string, unknown>> = {}
  for (const file of readdirSync(MANIFESTS).filter((f) => f.endsWith('.json')).sort()) {
    out[file.slice(0, -5)] = JSON.parse(readFileSync(path.join(MANIFESTS, file), 'utf8'))
  }
  return out
}

function json(res: RawResponse): any {
  return JSON.parse(res.body.toString('utf8'))
}

let platform: RunningProcess
const capture = JSON.parse(readFileSync(path.join(CAPTURE_FIXTURE, 'latest.json'), 'utf8'))
const png = readFileSync(path.join(CAPTURE_FIXTURE, 'latest.png'))

let screenshots = ''
t.before(async () => {
  screenshots = tempDir()
  const dir = path.join(screenshots, 'games', 'marble-maze-lab')
  mkdirSync(dir, { recursive: true })
  copyFileSync(path.join(CAPTURE_FIXTURE, 'latest.json'), path.join(dir, 'latest.json'))
  copyFileSync(path.join(CAPTURE_FIXTURE, 'latest.png'), path.join(dir, 'latest.png'))
  platform = await startPlatform({ env: { SCREENSHOTS_DIR: screenshots } })
})
t.teardown(() => platform?.stop())

/** What the list serves for each manifest: as written, with verifiedPlayCapture filled in. */
function served(): Record<string, Record<string, unknown>> {
  const games = manifests()
  for (const [id, game] of Object.entries(games)) {
    if (!('verifiedPlayCapture' in game)) game.verifiedPlayCapture = id === 'marble-maze-lab' ? capture : null
  }
  return games
}

t.test('GET /api/games answers every manifest as written, in file-name order', async (t) => {
  const res = await rawRequest(platform.url, 'GET', '/api/games')
  t.equal(res.status, 200)
  t.equal(res.headers['content-type'], 'application/json; charset=utf-8')
  t.equal(res.headers['vary'], 'Origin, Accept-Encoding')
  t.equal(res.headers['x-content-type-options'], 'nosniff', 'the flat header list of the hot path carries nosniff too')
  t.equal(res.headers['cache-control'], 'public, max-age=60, must-revalidate')
  t.match(res.headers['etag'], /^"[A-Za-z0-9_-]+"$/, 'a strong ETag')
  t.equal(res.headers['content-length'], String(res.body.length))
  t.strictSame(json(res), { success: true, games: Object.values(served()) })
  t.equal(json(res).games.find((g: any) => g.id === 'quill-and-quarry').verifiedPlayCapture, null, 'omitted and no capture file: null')
})

t.test('GET /api/games/{id} is the list entry plus leaderboardDetails, resolved per CONTRACT §5', async (t) => {
  const games = served()
  const seen = new Set<string>()
  for (const [id, game] of Object.entries(games)) {
    const res = await rawRequest(platform.url, 'GET', `/api/games/${id}`)
    t.equal(res.status, 200, id)
    const lb = game.leaderboards as { enabled?: boolean; ids?: string[] } | undefined
    const ids = lb && lb.enabled !== false ? lb.ids ?? [] : []
    const details: Record<string, unknown> = {}
    for (const board of ids) {
      const [operator, sortOrder, resetSchedule] = RESOLVED[board]!
      const next = resetSchedule === null ? null : new Cron(resetSchedule, { timezone: 'UTC' }).nextRun(new Date())!.toISOString()
      details[board] = { operator, sortOrder, resetSchedule, nextResetAt: next }
      seen.add(board)
    }
    t.strictSame(json(res), { success: true, ...game, leaderboardDetails: details }, `${id} detail`)
  }
  t.same([...seen].sort(), Object.keys(RESOLVED).sort(), 'the table covers every board of manifests/')
  const disabled = json(await rawRequest(platform.url, 'GET', '/api/games/orbit-orchard'))
  t.strictSame(disabled.leaderboardDetails, {}, '{enabled: false}: no boards')
})

t.test('nextResetAt reads a day or weekday list holding * or ? as * (unrestricted), and N/step as N to the field\'s end, as Nakama\'s cronexpr does', async (t) => {
  // cronexpr (nakama-api.md §3.4) marks a day field unrestricted when any entry of its list is * or ?;
  // then only the other day field picks the days. Found by a black-box audit: the platform read
  // `0 0 15 * *,3` as "the 15th or any day" (every midnight), Nakama as the 15th alone.
  const dir = tempDir()
  const game = JSON.parse(readFileSync(path.join(ROOT, 'test/fixtures/catalogue/valid/broken-game.json'), 'utf8'))
  const schedules: Record<string, [string, string]> = {
    'weekday-star-list': ['0 0 15 * *,3', '0 0 15 * *'],
    'day-star-list': ['0 0 *,15 * 3', '0 0 * * 3'],
    'day-question-list': ['0 0 ?,1 * 3', '0 0 * * 3'],
    'both-restricted': ['0 0 15 * 3', '0 0 15 * 3'],
    // cronexpr's `N/step` is N to the field's largest value (weekdays end at 6, and 7 is 0).
    'value-step': ['10/20 1/6 2/9 * *', '10-59/20 1-23/6 2-31/9 * *'],
    'weekday-value-step': ['0 12 * * 7/2', '0 12 * * 0,2,4,6'],
  }
  game.leaderboards = {
    default: 'both-restricted',
    ids: Object.keys(schedules),
    configs: Object.fromEntries(Object.entries(schedules).map(([id, [schedule]]) => [id, { resetSchedule: schedule }])),
  }
  writeFileSync(path.join(dir, 'broken-game.json'), JSON.stringify(game))
  const own = await startPlatform({ env: { MANIFESTS_DIR: dir } })
  t.teardown(() => own.stop())
  const details = json(await rawRequest(own.url, 'GET', '/api/games/broken-game')).leaderboardDetails
  for (const [id, [schedule, meaning]] of Object.entries(schedules)) {
    const next = new Cron(meaning, { timezone: 'UTC' }).nextRun(new Date())!.toISOString()
    t.strictSame(details[id], { operator: 'best', sortOrder: 'desc', resetSchedule: schedule, nextResetAt: next }, `${schedule} fires as ${meaning}`)
  }
})

t.test('an unknown game id is 404 GAME_NOT_FOUND', async (t) => {
  const res = await rawRequest(platform.url, 'GET', '/api/games/no-such-game')
  t.equal(res.status, 404)
  t.equal(res.headers['content-type'], 'application/json; charset=utf-8')
  t.strictSame(json(res), { error: 'no game "no-such-game"', code: 'GAME_NOT_FOUND' })
  const long = 'g'.repeat(8_000)
  const named = json(await rawRequest(platform.url, 'GET', `/api/games/${long}`))
  t.strictSame(named, { error: `no game "${'g'.repeat(128)}…"`, code: 'GAME_NOT_FOUND' }, 'a long id is named cut to 128 characters, as a leaderboard id is')
  // An id that is no valid percent-encoding is an unknown id too, not an unknown route.
  for (const [target, answer] of [
    ['/api/games/%ff', { error: 'no game "%ff"', code: 'GAME_NOT_FOUND' }],
    ['/api/games/%C3%28', { error: 'no game "%C3%28"', code: 'GAME_NOT_FOUND' }],
    ['/api/leaderboards/%ff', { error: 'no leaderboard "%ff"', code: 'LEADERBOARD_NOT_FOUND' }],
  ] as const) {
    const res = await rawRequest(platform.url, 'GET', target)
    t.strictSame([res.status, json(res)], [404, answer], target)
  }
})

t.test('POST /api/games is 405 with Allow', async (t) => {
  const res = await rawRequest(platform.url, 'POST', '/api/games', { 'content-type': 'application/json' }, '{}')
  t.equal(res.status, 405)
  t.equal(res.headers['allow'], 'GET, HEAD')
  t.strictSame(json(res), { error: 'POST not allowed', code: 'METHOD_NOT_ALLOWED' })
})

for (const target of ['/api/games', '/api/games/lantern-drift']) {
  t.test(`${target}: 304 on If-None-Match in every form, 200 on a stale tag`, async (t) => {
    const first = await rawRequest(platform.url, 'GET', target)
    const etag = first.headers['etag']!
    for (const inm of [etag, `W/${etag}`, `"stale", ${etag}`, `"stale",W/${etag}`, '*']) {
      const res = await rawRequest(platform.url, 'GET', target, { 'if-none-match': inm })
      t.equal(res.status, 304, `If-None-Match: ${inm}`)
      t.equal(res.body.length, 0)
      t.equal(res.headers['etag'], etag)
      t.equal(res.headers['vary'], 'Origin, Accept-Encoding')
      t.match(res.headers['cache-control'], /^public, max-age=\d+, must-revalidate$/)
    }
    const gz = await rawRequest(platform.url, 'GET', target, { 'accept-encoding': 'gzip' })
    const revalidated = await rawRequest(platform.url, 'GET', target, { 'accept-encoding': 'gzip', 'if-none-match': gz.headers['etag']! })
    t.equal(revalidated.status, 304, 'the gzip variant revalidates with its own tag')
    t.equal(revalidated.headers['etag'], gz.headers['etag'])
    // README: "a tag of any encoding of the current bytes matches".
    const br = await rawRequest(platform.url, 'GET', target, { 'accept-encoding': 'br' })
    const crossed = await rawRequest(platform.url, 'GET', target, { 'accept-encoding': 'br', 'if-none-match': gz.headers['etag']! })
    t.equal(crossed.status, 304, 'the gzip tag revalidates the brotli variant: the same bytes')
    t.equal(crossed.headers['etag'], br.headers['etag'])
    const stale = await rawRequest(platform.url, 'GET', target, { 'if-none-match': '"stale", W/"older"' })
    t.equal(stale.status, 200)
    t.same(stale.body, first.body)
  })

  t.test(`${target}: gzip and brotli round trips give the identity bytes`, async (t) => {
    const identity = await rawRequest(platform.url, 'GET', target)
    t.equal(identity.headers['content-encoding'], undefined)
    const gz = await rawRequest(platform.url, 'GET', target, { 'accept-encoding': 'gzip' })
    t.equal(gz.headers['content-encoding'], 'gzip')
    t.equal(gz.headers['content-length'], String(gz.body.length))
    t.ok(gz.body.length < identity.body.length, 'smaller')
    t.same(gunzipSync(gz.body), identity.body)
    const br = await rawRequest(platform.url, 'GET', target, { 'accept-encoding': 'gzip, deflate, br' })
    t.equal(br.headers['content-encoding'], 'br', 'brotli preferred at equal q')
    t.same(brotliDecompressSync(br.body), identity.body)
    const tags = new Set([identity, gz, br].map((r) => r.headers['etag']))
    t.equal(tags.size, 3, 'each encoding has its own strong ETag')
    for (const r of [identity, gz, br]) t.equal(r.headers['vary'], 'Origin, Accept-Encoding')
  })
}

t.test('Accept-Encoding q-values pick the encoding; refusing everything falls back to identity', async (t) => {
  const cases: [string, string | undefined][] = [
    ['gzip;q=0.5, br;q=0.1', 'gzip'],
    ['br;q=0.2, gzip;q=0.9', 'gzip'],
    ['br, gzip;q=0.9', 'br'],
    ['*', 'br'],
    ['gzip;q=0, br;q=0', undefined],
    ['identity;q=0, *;q=0', undefined],
    ['deflate', undefined],
    ['GZIP', 'gzip'],
    // RFC 9110 §8.4.1.3: x-gzip is gzip; parameter names (q) are case-insensitive.
    ['x-gzip', 'gzip'],
    ['gzip;Q=0.5, br;Q=0.1', 'gzip'],
    ['', undefined],
  ]
  for (const [accept, encoding] of cases) {
    const res = await rawRequest(platform.url, 'GET', '/api/games', { 'accept-encoding': accept })
    t.equal(res.status, 200)
    t.equal(res.headers['content-encoding'], encoding, `Accept-Encoding: ${accept}`)
  }
})

// README: "a detail's max-age never reaches past its next reset". A board resetting every minute
// has its next reset under 60 s away, so the minute of caching the list gets is too long for it.
t.test('a detail\'s max-age ends by its next reset, however close', async (t) => {
  const manifests = tempDir()
  const game = JSON.parse(readFileSync(path.join(ROOT, 'test/fixtures/catalogue/valid/broken-game.json'), 'utf8'))
  game.leaderboards.configs.main.resetSchedule = '* * * * *'
  writeFileSync(path.join(manifests, 'broken-game.json'), JSON.stringify(game))
  const minutely = await startPlatform({ env: { MANIFESTS_DIR: manifests } })
  t.teardown(() => minutely.stop())
  // A request that straddles a reset is asked again: its answer may name either reset.
  for (let tries = 0; tries < 3; tries++) {
    const before = Date.now()
    const res = await rawRequest(minutely.url, 'GET', '/api/games/broken-game')
    if (Math.floor(Date.now() / 60_000) !== Math.floor(before / 60_000)) continue
    t.equal(res.status, 200)
    const maxAge = Number(/^public, max-age=(\d+), must-revalidate$/.exec(res.headers['cache-control']!)![1])
    const next = Date.parse(json(res).leaderboardDetails.main.nextResetAt)
    t.ok(before + maxAge * 1000 <= next, `max-age=${maxAge} ends by the next reset, ${new Date(next).toISOString()}`)
    return
  }
  t.fail('three requests in a row straddled a minute')
})

t.test('HEAD answers the headers of GET without a body', async (t) => {
  for (const [target, headers] of [['/api/games', {}], ['/api/games/hollow-keep', { 'accept-encoding': 'br' }]] as const) {
    const get = await rawRequest(platform.url, 'GET', target, headers)
    const head = await rawRequest(platform.url, 'HEAD', target, headers)
    t.equal(head.status, 200)
    t.equal(head.body.length, 0)
    for (const name of ['content-length', 'content-type', 'content-encoding', 'etag', 'vary', 'cache-control']) {
      t.equal(head.headers[name], get.headers[name], `${target} ${name}`)
    }
  }
})

t.test('CORS: an allowed origin gets its headers, a foreign one is answered without them', async (t) => {
  const allowed = await rawRequest(platform.url, 'GET', '/api/games', { origin: 'http://127.0.0.1:3000' })
  t.equal(allowed.headers['access-control-allow-origin'], 'http://127.0.0.1:3000')
  t.equal(allowed.headers['access-control-allow-credentials'], 'true')
  t.match(allowed.headers['access-control-expose-headers'], /ETag/)
  const foreign = await rawRequest(platform.url, 'GET', '/api/games', { origin: 'https://evil.example' })
  t.equal(foreign.status, 200)
  t.equal(foreign.headers['access-control-allow-origin'], undefined)
  t.equal(foreign.headers['vary'], 'Origin, Accept-Encoding')
})

t.test('the capture address of imageUrl (spec 4 rule 6) serves the latest capture to a signed-in user', async (t) => {
  const address = '/api/developer/games/marble-maze-lab/capture'
  const anonymous = await rawRequest(platform.url, 'GET', `${address}?asset=image&v=1`)
  t.strictSame([anonymous.status, json(anonymous)], [401, { error: 'no session', code: 'NO_SESSION' }], 'not public (CONTRACT §2)')
  const c = new Client(platform.url)
  t.equal((await c.post('/api/auth/guest')).status, 200)
  const image = await c.get(`${address}?asset=image&v=1759413911`)
  t.equal(image.status, 200)
  t.equal(image.headers.get('content-type'), 'image/png')
  t.equal(image.headers.get('x-content-type-options'), 'nosniff')
  t.same(Buffer.from(await image.arrayBuffer()), png)
  const revalidated = await c.get(`${address}?asset=image&v=1759413911`, { 'if-none-match': image.headers.get('etag')! })
  t.equal(revalidated.status, 304)
  for (const query of ['?asset=metadata', '']) {
    const meta = await c.get(`${address}${query}`)
    t.equal(meta.status, 200, query || 'no asset')
    t.strictSame(await meta.json(), capture)
  }
  const errors: [string, number, string][] = [
    ['/api/developer/games/marble-maze-lab/capture?asset=video', 400, 'VALIDATION_FAILED'],
    ['/api/developer/games/marble-maze-lab/capture?asset=metadata&asset=video', 400, 'VALIDATION_FAILED'],
    ['/api/developer/games/no-such-game/capture?asset=image', 404, 'GAME_NOT_FOUND'],
    ['/api/developer/games/lantern-drift/capture?asset=image', 404, 'NOT_FOUND'],
    ['/api/developer/games/..%2F..%2Fetc/capture?asset=image', 404, 'GAME_NOT_FOUND'],
  ]
  for (const [target, status, code] of errors) {
    const res = await c.get(target)
    t.equal(res.status, status, target)
    t.match(await res.json(), { code }, target)
    t.match(res.headers.get('content-type'), /^application\/json/, `${target}: JSON under /api/`)
  }
})

t.test('/screenshots/ serves SCREENSHOTS_DIR with its types, and nothing outside it', async (t) => {
  const image = await rawRequest(platform.url, 'GET', '/screenshots/games/marble-maze-lab/latest.png')
  t.equal(image.status, 200)
  t.equal(image.headers['content-type'], 'image/png')
  t.equal(image.headers['x-content-type-options'], 'nosniff')
  t.same(image.body, png)
  const again = await rawRequest(platform.url, 'GET', '/screenshots/games/marble-maze-lab/latest.png', { 'if-none-match': image.headers['etag']! })
  t.equal(again.status, 304)
  const meta = await rawRequest(platform.url, 'GET', '/screenshots/games/marble-maze-lab/latest.json')
  t.equal(meta.headers['content-type'], 'application/json; charset=utf-8')
  t.strictSame(json(meta), capture)
  for (const target of [
    '/screenshots/games/marble-maze-lab/missing.png',
    '/screenshots/games/marble-maze-lab/..%2F..%2F..%2Fetc%2Fpasswd',
    '/screenshots/games/..%2F..%2Fetc/passwd',
    '/screenshots/games/marble-maze-lab/%2e%2e',
    '/screenshots/games/../../../../etc/passwd',
    '/screenshots/games/marble-maze-lab/.hidden.json',
    '/screenshots/games/marble-maze-lab/latest.sh',
  ]) {
    const res = await rawRequest(platform.url, 'GET', target)
    t.equal(res.status, 404, target)
    t.match(res.headers['content-type'], /^text\/html/, `${target}: a page, not JSON`)
  }
})

t.test('/screenshots/ serves no file outside SCREENSHOTS_DIR through a link, no FIFO, and closes every file it opens', async (t) => {
  // The capture tool's account writes SCREENSHOTS_DIR: a link there once served DATA_DIR's secrets.
  const outside = tempDir()
  writeFileSync(path.join(outside, 'secret.txt'), 'the session secret')
  const dir = path.join(screenshots, 'games', 'marble-maze-lab')
  symlinkSync(path.join(outside, 'secret.txt'), path.join(dir, 'secret.txt'))
  symlinkSync('../../../' + path.basename(outside) + '/secret.txt', path.join(dir, 'relative.txt'))
  symlinkSync(outside, path.join(screenshots, 'games', 'elsewhere'))
  symlinkSync('latest.png', path.join(dir, 'alias.png'))
  execFileSync('mkfifo', [path.join(dir, 'pipe.txt')])
  for (const target of ['marble-maze-lab/secret.txt', 'marble-maze-lab/relative.txt', 'elsewhere/secret.txt', 'marble-maze-lab/pipe.txt']) {
    const res = await rawRequest(platform.url, 'GET', `/screenshots/games/${target}`)
    t.equal(res.status, 404, target)
    t.notMatch(res.body.toString(), /session secret/, `${target}: nothing of the file`)
  }
  const alias = await rawRequest(platform.url, 'GET', '/screenshots/games/marble-maze-lab/alias.png')
  t.same([alias.status, alias.body], [200, png], 'a link that stays inside is served')
  const head = await rawRequest(platform.url, 'HEAD', '/screenshots/games/marble-maze-lab/latest.png')
  t.same([head.status, head.headers['content-length'], head.body.length], [200, String(png.length), 0], 'HEAD: the length, no body')

  // Clients that leave in the middle of a large file: each file is closed all the same.
  writeFileSync(path.join(dir, 'large.txt'), 'x'.repeat(8 * 1024 * 1024))
  const fds = (): number => readdirSync(`/proc/${platform.child.pid}/fd`).length
  const before = fds()
  for (let i = 0; i < 20; i++) {
    await new Promise<void>((resolve) => {
      const req = http.get(`${platform.url}/screenshots/games/marble-maze-lab/large.txt`, (res) => {
        res.once('data', () => {
          req.destroy()
          resolve()
        })
      })
      req.on('error', () => resolve())
    })
  }
  for (let i = 0; i < 20; i++) await rawRequest(platform.url, 'GET', '/screenshots/games/marble-maze-lab/secret.txt')
  let after = fds()
  for (let i = 0; i < 50 && after > before; i++) {
    await sleep(50)
    after = fds()
  }
  t.ok(after <= before, `descriptors back to ${before} (now ${after})`)
})

/** The command that runs a program with an empty /proc (a private mount namespace), when this machine allows it. */
const HIDE_PROC = ['unshare', '--mount', '--propagation', 'private', '--', 'sh', '-c', 'mount -t tmpfs none /proc && exec "$@"', 'sh']
const canHideProc = process.getuid?.() === 0 && spawnSync(HIDE_PROC[0]!, [...HIDE_PROC.slice(1), 'true'], { stdio: 'ignore' }).status === 0

t.test('without /proc (a container that does not mount it) /screenshots/ still serves its files and no link out', { skip: !canHideProc && 'needs root and a private mount namespace' }, async (t) => {
  const outside = tempDir()
  writeFileSync(path.join(outside, 'secret.txt'), 'the session secret')
  const shots = tempDir()
  const dir = path.join(shots, 'games', 'marble-maze-lab')
  mkdirSync(dir, { recursive: true })
  writeFileSync(path.join(dir, 'latest.png'), png)
  symlinkSync(path.join(outside, 'secret.txt'), path.join(dir, 'secret.txt'))
  const hidden = await startPlatform({
    command: [...HIDE_PROC, process.execPath, PLATFORM_JS],
    env: { SCREENSHOTS_DIR: shots },
  })
  t.teardown(() => hidden.stop())
  const image = await rawRequest(hidden.url, 'GET', '/screenshots/games/marble-maze-lab/latest.png')
  t.same([image.status, image.body], [200, png])
  const secret = await rawRequest(hidden.url, 'GET', '/screenshots/games/marble-maze-lab/secret.txt')
  t.equal(secret.status, 404, 'a link out is refused all the same')
})
