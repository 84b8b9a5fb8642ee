import t from 'tap'
import { linkSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { startPlatform, tempDir } from './helpers/platform.js'
import { rawRequest } from './helpers/raw-http.js'

// README "GET /screenshots/games/{id}/{file}": the headers it promises, and "a link is followed
// only to a file inside SCREENSHOTS_DIR", a directory beside it whose name starts the same included.
const parent = tempDir()
const screenshots = path.join(parent, 'shots')
const dir = path.join(screenshots, 'games', 'marble-maze-lab')
mkdirSync(dir, { recursive: true })
writeFileSync(path.join(dir, 'notes.json'), '{"result":"visible"}\n')
writeFileSync(path.join(dir, '.draft.json'), '{"result":"draft"}\n')
mkdirSync(path.join(parent, 'shots-private'))
writeFileSync(path.join(parent, 'shots-private', 'secret.txt'), 'the session secret\n')
symlinkSync(path.join(parent, 'shots-private', 'secret.txt'), path.join(dir, 'beside.txt'))
symlinkSync('../../../shots-private/secret.txt', path.join(dir, 'beside-relative.txt'))

const platform = await startPlatform({ env: { SCREENSHOTS_DIR: screenshots } })
t.teardown(() => platform.stop())

t.test('a capture is served with a weak ETag and a minute of caching, revalidated by a 304 without a body', async (t) => {
  const res = await rawRequest(platform.url, 'GET', '/screenshots/games/marble-maze-lab/notes.json')
  t.equal(res.status, 200)
  t.equal(res.body.toString(), '{"result":"visible"}\n')
  t.equal(res.headers['content-type'], 'application/json; charset=utf-8')
  t.equal(res.headers['cache-control'], 'public, max-age=60, must-revalidate')
  t.match(res.headers['etag'], /^W\/"[0-9a-z]+-[0-9a-z]+"$/, 'weak: size and modification time, not the bytes')
  const again = await rawRequest(platform.url, 'GET', '/screenshots/games/marble-maze-lab/notes.json', { 'if-none-match': res.headers['etag']! })
  t.equal(again.status, 304)
  t.equal(again.body.length, 0)
  t.equal(again.headers['etag'], res.headers['etag'])
  t.equal(again.headers['cache-control'], 'public, max-age=60, must-revalidate')
})

t.test('a link to a directory beside SCREENSHOTS_DIR whose name starts the same (shots-private) is a 404', async (t) => {
  for (const file of ['beside.txt', 'beside-relative.txt']) {
    const res = await rawRequest(platform.url, 'GET', `/screenshots/games/marble-maze-lab/${file}`)
    t.equal(res.status, 404, file)
    t.match(res.headers['content-type'], /^text\/html/, file)
    t.notMatch(res.body.toString(), /session secret/, `${file}: nothing of the file`)
  }
})

t.test('a file whose name starts with a dot is not served, though it exists and has a known type', async (t) => {
  for (const target of ['/screenshots/games/marble-maze-lab/.draft.json', '/screenshots/games/marble-maze-lab/%2Edraft.json']) {
    const res = await rawRequest(platform.url, 'GET', target)
    t.equal(res.status, 404, target)
    t.match(res.headers['content-type'], /^text\/html/, target)
    t.notMatch(res.body.toString(), /draft/, `${target}: nothing of the file`)
  }
})

// Found by a security review: with SCREENSHOTS_DIR at or above DATA_DIR (SCREENSHOTS_DIR=/srv/pf,
// DATA_DIR=/srv/pf/data), a link the capture tool's account made to DATA_DIR's secrets or database
// stayed inside SCREENSHOTS_DIR, and /screenshots/ served the session secret to anyone.
t.test('a link to DATA_DIR\'s secrets or database is a 404 also when SCREENSHOTS_DIR holds DATA_DIR', async (t) => {
  for (const layout of ['parent', 'same'] as const) {
    const shots = tempDir()
    const dataDir = layout === 'same' ? shots : path.join(shots, 'data')
    mkdirSync(dataDir, { recursive: true, mode: 0o700 })
    const games = path.join(shots, 'games', 'marble-maze-lab')
    mkdirSync(games, { recursive: true })
    writeFileSync(path.join(games, 'notes.json'), '{"result":"visible"}\n')
    const own = await startPlatform({ dataDir, env: { SCREENSHOTS_DIR: shots } })
    const secret = path.join(dataDir, 'secrets', 'session-secret')
    symlinkSync(secret, path.join(games, 'key.txt'))
    symlinkSync(path.relative(games, secret), path.join(games, 'key-relative.txt'))
    symlinkSync(path.join(dataDir, 'playfield.sqlite'), path.join(games, 'db.txt'))
    // Found by a security audit: a hard link is no link a path check sees.
    linkSync(secret, path.join(games, 'hard.txt'))
    linkSync(path.join(dataDir, 'playfield.sqlite'), path.join(games, 'hard-db.txt'))
    // A capture of two names, neither of them DATA_DIR's, is still one.
    linkSync(path.join(games, 'notes.json'), path.join(games, 'notes-again.json'))
    try {
      const twice = await rawRequest(own.url, 'GET', '/screenshots/games/marble-maze-lab/notes-again.json')
      t.same([twice.status, twice.body.toString()], [200, '{"result":"visible"}\n'], `${layout}: a capture with two names`)
      const served = await rawRequest(own.url, 'GET', '/screenshots/games/marble-maze-lab/notes.json')
      t.equal(served.status, 200, `${layout}: a capture is still served`)
      for (const file of ['key.txt', 'key-relative.txt', 'db.txt', 'hard.txt', 'hard-db.txt']) {
        const res = await rawRequest(own.url, 'GET', `/screenshots/games/marble-maze-lab/${file}`)
        t.equal(res.status, 404, `${layout}: ${file}`)
        t.match(res.headers['content-type'], /^text\/html/, `${layout}: ${file}`)
      }
    } finally {
      await own.stop()
    }
  }
})

// The usual layout, DATA_DIR and SCREENSHOTS_DIR apart (/var/lib/playfield beside /srv/playfield/shots)
// on one file system: a hard link the capture tool's account makes to DATA_DIR's secret or database
// is inside SCREENSHOTS_DIR by every path, and no link a path check sees.
t.test('a hard link to DATA_DIR\'s secrets or database is a 404 also when DATA_DIR lies outside SCREENSHOTS_DIR', async (t) => {
  const shots = tempDir()
  const dataDir = tempDir()
  const games = path.join(shots, 'games', 'marble-maze-lab')
  mkdirSync(games, { recursive: true })
  writeFileSync(path.join(games, 'notes.json'), '{"result":"visible"}\n')
  const own = await startPlatform({ dataDir, env: { SCREENSHOTS_DIR: shots } })
  t.teardown(() => own.stop())
  linkSync(path.join(dataDir, 'secrets', 'session-secret'), path.join(games, 'hard.txt'))
  linkSync(path.join(dataDir, 'playfield.sqlite'), path.join(games, 'hard-db.txt'))
  linkSync(path.join(games, 'notes.json'), path.join(games, 'notes-again.json'))
  const twice = await rawRequest(own.url, 'GET', '/screenshots/games/marble-maze-lab/notes-again.json')
  t.same([twice.status, twice.body.toString()], [200, '{"result":"visible"}\n'], 'a capture with two names is served')
  for (const file of ['hard.txt', 'hard-db.txt']) {
    const res = await rawRequest(own.url, 'GET', `/screenshots/games/marble-maze-lab/${file}`)
    t.equal(res.status, 404, file)
    t.match(res.headers['content-type'], /^text\/html/, file)
  }
})
