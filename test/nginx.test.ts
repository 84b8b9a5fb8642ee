import t from 'tap'
import { readFileSync } from 'node:fs'
import { tempDir, startPlatform, type RunningProcess } from './helpers/platform.js'
import { freePort, makeCertificate, request, startNginx, type RunningNginx, type SitePorts } from './helpers/nginx.js'

// End to end through the real nginx running the shipped site (systemd/nginx.conf), with only
// ports, certificate and log paths swapped for the test machine's.

const dir = tempDir('playfield-proxy-')
const cert = makeCertificate(dir)
const ports: SitePorts = { https: await freePort(), http: await freePort(), platform: 0, terminal: await freePort() }
const ORIGIN = `https://127.0.0.1:${ports.https}`
const BASE = ORIGIN
const ca = cert.pem

let platform: RunningProcess
let nginx: RunningNginx

t.before(async () => {
  platform = await startPlatform({
    env: {
      // Mixed origins, so the session cookie's Secure flag follows the forwarded protocol.
      PLATFORM_ORIGINS: `${ORIGIN},http://127.0.0.1:3000`,
      TRUST_PROXY: '127.0.0.1',
      TERMINAL_PORT: String(ports.terminal),
    },
  })
  ports.platform = platform.port
  nginx = await startNginx(ports, cert)
})

t.teardown(async () => {
  await nginx?.stop()
  await platform?.stop()
})

/** The first log line of `process` matching `test`; the access log is written when a response closes. */
async function waitForLog(process: RunningProcess, test: (line: Record<string, unknown>) => boolean): Promise<Record<string, unknown> | undefined> {
  for (let i = 0; i < 100; i++) {
    const line = process.logs.find(test)
    if (line) return line
    await new Promise((r) => setTimeout(r, 20))
  }
  return undefined
}

t.test('plain http redirects to https with the same path', async (t) => {
  const res = await request('GET', `http://127.0.0.1:${ports.http}/api/games?x=1`)
  t.equal(res.status, 301)
  t.equal(res.headers.location, 'https://127.0.0.1/api/games?x=1')
})

t.test('GET /api/games over https answers what the platform answers, with HSTS', async (t) => {
  const proxied = await request('GET', `${BASE}/api/games`, { ca })
  const direct = await request('GET', `${platform.url}/api/games`)
  t.equal(proxied.status, 200)
  t.match(proxied.headers['content-type'], /^application\/json/)
  t.equal(proxied.headers['strict-transport-security'], 'max-age=63072000')
  t.equal(proxied.headers.server, 'nginx', 'server_tokens off: no version')
  t.same(JSON.parse(proxied.body), JSON.parse(direct.body))
  t.ok((JSON.parse(proxied.body) as { games: unknown[] }).games.length > 0)
  t.equal(proxied.headers.etag, direct.headers.etag)
})

t.test('the certificate is checked: a client that does not trust it is refused', async (t) => {
  await t.rejects(request('GET', `${BASE}/api/games`), { code: 'DEPTH_ZERO_SELF_SIGNED_CERT' })
})

t.test('the access log records the client address nginx forwarded, not the proxy', async (t) => {
  const res = await request('GET', `${BASE}/api/games/no-such-game`, { ca, localAddress: '127.0.0.5' })
  t.equal(res.status, 404)
  t.same(JSON.parse(res.body), { error: JSON.parse(res.body).error, code: 'GAME_NOT_FOUND' })
  const line = await waitForLog(platform, (l) => l.event === 'http.request' && l.path === '/api/games/no-such-game')
  t.match(line, { status: 404, ip: '127.0.0.5' })
})

t.test('X-Forwarded-Proto reaches the platform: the session cookie is Secure behind https only', async (t) => {
  const proxied = await request('POST', `${BASE}/api/auth/guest`, { ca })
  t.equal(proxied.status, 200)
  const cookie = String(proxied.headers['set-cookie'])
  t.match(cookie, /^playfield_session=/)
  t.match(cookie, /; Secure/i)
  const direct = await request('POST', `${platform.url}/api/auth/guest`)
  t.equal(direct.status, 200)
  t.notMatch(String(direct.headers['set-cookie']), /Secure/i)
})

t.test('the sign-in limit counts per forwarded client address, not per proxy', async (t) => {
  const login = (from: string) =>
    request('POST', `${BASE}/api/auth/login`, {
      ca,
      localAddress: from,
      headers: { origin: ORIGIN },
      body: { username: 'nobody-here', password: 'wrong password' },
    })
  for (let i = 1; i <= 10; i++) {
    const res = await login('127.0.0.2')
    t.equal(res.status, 401, `failure ${i} from 127.0.0.2 is 401`)
    t.same(JSON.parse(res.body), { error: JSON.parse(res.body).error, code: 'INVALID_CREDENTIALS' })
  }
  const limited = await login('127.0.0.2')
  t.equal(limited.status, 429, 'the 11th try from 127.0.0.2 is limited')
  t.equal(JSON.parse(limited.body).code, 'RATE_LIMITED')
  t.ok(Number(limited.headers['retry-after']) > 0, 'with Retry-After')
  const other = await login('127.0.0.3')
  t.equal(other.status, 401, 'another client behind the same proxy is not limited')
  await waitForLog(platform, (l) => l.event === 'http.request' && l.path === '/api/auth/login' && l.ip === '127.0.0.3')
  const seen = platform.logs.filter((l) => l.event === 'http.request' && l.path === '/api/auth/login').map((l) => l.ip)
  t.same([...new Set(seen)], ['127.0.0.2', '127.0.0.3'])
})

t.test('a state-changing request with a foreign Origin is refused through the proxy', async (t) => {
  const res = await request('POST', `${BASE}/api/auth/guest`, { ca, headers: { origin: 'https://evil.example' } })
  t.equal(res.status, 403)
  t.same(JSON.parse(res.body), { error: JSON.parse(res.body).error, code: 'FORBIDDEN_ORIGIN' })
})

t.test('with the bridge down, /terminal-ws/ answers 502 and the platform keeps serving', async (t) => {
  const health = await request('GET', `${BASE}/terminal-ws/`, { ca })
  t.equal(health.status, 502)
  const upgrade = await request('GET', `${BASE}/terminal-ws/ws`, {
    ca,
    headers: { connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==' },
  })
  t.equal(upgrade.status, 502)
  const games = await request('GET', `${BASE}/api/games`, { ca })
  t.equal(games.status, 200)
  t.match(readFileSync(`${nginx.prefix}/logs/playfield.error.log`, 'utf8'), /connect\(\) failed \(111: Connection refused\)/)
})
