import t from 'tap'
import { setTimeout as sleep } from 'node:timers/promises'
import { readFileSync } from 'node:fs'
import { userInfo } from 'node:os'
import { WebSocket } from 'ws'
import { freePort, tempDir, startPlatform, type RunningProcess } from './helpers/platform.js'
import { SITE_CONF, makeCertificate, request, startNginx, type RunningNginx, type SitePorts } from './helpers/nginx.js'
import { SHELL_USER, TICKET_SECRET, TermClient, ensureShellUser, startBridge } from './helpers/terminal.js'
import { homeOf, parseUnit, unitEnvironment, unitLaunch, unitText } from './helpers/units.js'

// End to end through the real nginx running the shipped site (systemd/nginx.conf), with only
// ports, certificate and log paths swapped for the test machine's.

const dir = tempDir('playfield-proxy-')
const cert = makeCertificate(dir)
const ports: SitePorts = { https: await freePort(), http: await freePort(), platform: 0, terminal: await freePort() }
const ORIGIN = `https://127.0.0.1:${ports.https}`
const BASE = ORIGIN
const ca = cert.pem

// Mixed origins, so the session cookie's Secure flag follows the forwarded protocol.
const ORIGINS = `${ORIGIN},http://127.0.0.1:3000`
const DEVELOPER = { username: 'deployer', password: 'correct horse battery' }
/** A load balancer in front of nginx, which forwards its clients' addresses in X-Forwarded-For. */
const LOAD_BALANCER = '127.0.0.6'
/** The peer playfield.service believes X-Forwarded-For from: the site's proxy_bind address. */
const UNIT_TRUST_PROXY = unitEnvironment(parseUnit(unitText('playfield.service'))).TRUST_PROXY

let platform: RunningProcess
let bridge: RunningProcess
let nginx: RunningNginx

/**
 * The bridge as its unit runs it (as the shell account, see test/systemd.test.ts) when the test
 * runs as root and the account can reach the checkout; otherwise the terminal tests' own way.
 */
async function startUnitBridge(): Promise<RunningProcess> {
  const env = { TERMINAL_PORT: String(ports.terminal), TERMINAL_TICKET_SECRET: TICKET_SECRET, PLATFORM_ORIGINS: ORIGINS }
  ensureShellUser()
  const home = process.getuid?.() === 0 ? homeOf(SHELL_USER) : ''
  const launch = unitLaunch(parseUnit(unitText('playfield-terminal.service')), SHELL_USER, { '/var/lib/playfield-shell': home })
  if (!launch.asAccount) return startBridge(env)
  return startPlatform({
    command: launch.command,
    cwd: launch.cwd,
    readyEvent: 'bridge.listening',
    env: { ...launch.env, HOME: home, ...env },
  })
}

t.before(async () => {
  platform = await startPlatform({
    env: {
      PLATFORM_ORIGINS: ORIGINS,
      // As its unit runs it (X-Forwarded-For believed from the site's proxy_bind address), with a
      // load balancer in front of nginx added as Deploy step 4 says: LOAD_BALANCER.
      TRUST_PROXY: `${UNIT_TRUST_PROXY!},${LOAD_BALANCER}`,
      TERMINAL_PORT: String(ports.terminal),
      TERMINAL_TICKET_SECRET: TICKET_SECRET,
      DEV_ACCESS_USERS: DEVELOPER.username,
    },
  })
  ports.platform = platform.port
  bridge = await startUnitBridge()
  // With the PATH a non-root account gets on Debian (/etc/profile), which leaves out /usr/sbin
  // where nginx is: `npm test` as a developer failed here with `spawnSync nginx ENOENT`. Both of
  // startNginx's nginx runs happen before its first await, so the swap covers them and no more.
  const rootPath = process.env.PATH
  process.env.PATH = '/usr/local/bin:/usr/bin:/bin'
  const started = startNginx(ports, cert)
  process.env.PATH = rootPath
  nginx = await started
})

t.teardown(async () => {
  await nginx?.stop()
  await bridge?.stop()
  await platform?.stop()
})

/** The first log line of `process` matching `test`; the access log is written when a response closes. */
async function waitForLog(process: RunningProcess, test: (line: Record<string, unknown>) => boolean): Promise<Record<string, unknown> | undefined> {
  for (let i = 0; i < 100; i++) {
    const line = process.logs.find(test)
    if (line) return line
    await sleep(20)
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

// The shipped pair (the site's proxy_bind, the unit's TRUST_PROXY): a local process on 127.0.0.1,
// as a developer's shell is, names no address of its choosing, directly or through nginx. With
// 127.0.0.1 trusted (the platform's default, which the unit kept) its claim was believed directly,
// and through nginx its 127.0.0.1 hop was skipped and the claim taken: a shell could send sign-in
// attempts under any address.
t.test('a local client on 127.0.0.1 claiming another address is counted as 127.0.0.1, directly and through nginx', async (t) => {
  const claim = { 'x-forwarded-for': '198.51.100.7', 'x-forwarded-proto': 'https' }
  const direct = await request('GET', `${platform.url}/api/games/claim-direct`, { headers: claim, localAddress: '127.0.0.1' })
  t.equal(direct.status, 404)
  const proxied = await request('GET', `${BASE}/api/games/claim-proxied`, { ca, headers: claim, localAddress: '127.0.0.1' })
  t.equal(proxied.status, 404)
  t.match(await waitForLog(platform, (l) => l.event === 'http.request' && l.path === '/api/games/claim-direct'), { ip: '127.0.0.1' }, 'directly: the peer')
  t.match(await waitForLog(platform, (l) => l.event === 'http.request' && l.path === '/api/games/claim-proxied'), { ip: '127.0.0.1' }, 'through nginx: the hop nginx saw')
  const guest = await request('POST', `${platform.url}/api/auth/guest`, { headers: { ...claim, origin: 'http://127.0.0.1:3000' }, localAddress: '127.0.0.1' })
  t.equal(guest.status, 200)
  t.notMatch(String(guest.headers['set-cookie']), /Secure/i, 'nor a scheme: X-Forwarded-Proto from 127.0.0.1 is not believed either')
})

// Every loopback address is one client to the limit (auth-limit.test), so the clients here are
// addresses a load balancer in front of nginx forwards, as it would for visitors.
t.test('the sign-in limit counts per forwarded client address, not per proxy', async (t) => {
  const login = (forwarded: string) =>
    request('POST', `${BASE}/api/auth/login`, {
      ca,
      localAddress: LOAD_BALANCER,
      headers: { origin: ORIGIN, 'x-forwarded-for': forwarded },
      body: { username: 'nobody-here', password: 'wrong password' },
    })
  for (let i = 1; i <= 10; i++) {
    const res = await login('198.51.100.7')
    t.equal(res.status, 401, `failure ${i} from 198.51.100.7 is 401`)
    t.same(JSON.parse(res.body), { error: JSON.parse(res.body).error, code: 'INVALID_CREDENTIALS' })
  }
  const limited = await login('198.51.100.7')
  t.equal(limited.status, 429, 'the 11th try from 198.51.100.7 is limited')
  t.equal(JSON.parse(limited.body).code, 'RATE_LIMITED')
  t.ok(Number(limited.headers['retry-after']) > 0, 'with Retry-After')
  // The client's own X-Forwarded-For, to which the balancer appends the address it saw.
  const spoofed = await login('203.0.113.1, 198.51.100.7')
  t.equal(spoofed.status, 429, 'an X-Forwarded-For sent by the client does not escape the limit')
  const other = await login('198.51.100.8')
  t.equal(other.status, 401, 'another client behind the same proxies is not limited')
  await waitForLog(platform, (l) => l.event === 'http.request' && l.path === '/api/auth/login' && l.ip === '198.51.100.8')
  const seen = platform.logs.filter((l) => l.event === 'http.request' && l.path === '/api/auth/login').map((l) => l.ip)
  t.same([...new Set(seen)], ['198.51.100.7', '198.51.100.8'])
})

t.test('a state-changing request with a foreign Origin is refused through the proxy', async (t) => {
  const res = await request('POST', `${BASE}/api/auth/guest`, { ca, headers: { origin: 'https://evil.example' } })
  t.equal(res.status, 403)
  t.same(JSON.parse(res.body), { error: JSON.parse(res.body).error, code: 'FORBIDDEN_ORIGIN' })
})

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const TOO_LARGE_BODY = { error: 'body larger than 65536 bytes', code: 'PAYLOAD_TOO_LARGE' }
const TOO_LARGE_HEADERS = { error: 'request headers larger than 16 KiB (a long URL counts)', code: 'HEADERS_TOO_LARGE' }
const JSON_BODY = { origin: ORIGIN, 'content-type': 'application/json' }

/** The CORS headers of an answer to the allowed ORIGIN, as the platform's own answers carry them; none for another origin. */
function corsOf(headers: Record<string, string | string[] | undefined>): Record<string, string | string[] | undefined> {
  const names = ['access-control-allow-origin', 'access-control-allow-credentials', 'access-control-expose-headers', 'access-control-allow-methods']
  return Object.fromEntries(names.filter((n) => headers[n] !== undefined).map((n) => [n, headers[n]]))
}
const CORS = { 'access-control-allow-origin': ORIGIN, 'access-control-allow-credentials': 'true', 'access-control-expose-headers': 'Allow, ETag, Retry-After, X-Request-Id' }

/** The body as JSON, or as the text it is when it is not JSON (nginx's own HTML pages). */
function jsonOf(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

/** The platform's log line for the request `id`, once written; undefined when it never comes. */
function platformLine(id: unknown): Promise<Record<string, unknown> | undefined> {
  return waitForLog(platform, (l) => l.id === id)
}

/** Wait for nginx's access log to name `id`: the site logs the id of each answer nginx gives itself. */
async function nginxLogged(id: string): Promise<boolean> {
  for (let i = 0; i < 100; i++) {
    if (nginx.accessLog().includes(id)) return true
    await sleep(20)
  }
  return false
}

t.test('a body over 65,536 bytes is 413 PAYLOAD_TOO_LARGE in JSON through nginx, as from the platform directly', async (t) => {
  const direct = await request('POST', `${platform.url}/api/auth/login`, { headers: JSON_BODY, raw: Buffer.alloc(65_537, 'a') })
  t.equal(direct.status, 413, 'the platform refuses 65,537 bytes')
  t.same(jsonOf(direct.body), TOO_LARGE_BODY)
  t.same(corsOf(direct.headers), CORS, 'with CORS headers for an allowed origin')
  const foreign = await request('POST', `${BASE}/api/auth/login`, { ca, headers: { ...JSON_BODY, origin: 'https://elsewhere.example' }, raw: Buffer.alloc(65_537, 'a') })
  t.equal(foreign.status, 413)
  t.same(corsOf(foreign.headers), {}, 'nginx\'s 413 to another origin: no CORS headers, as the platform gives none')
  for (const size of [65_537, 1_000_000, 2 * 1024 * 1024]) {
    for (const chunked of [false, true]) {
      const how = `${size} bytes ${chunked ? 'chunked' : 'with Content-Length'}`
      const res = await request('POST', `${BASE}/api/auth/login`, { ca, headers: JSON_BODY, raw: Buffer.alloc(size, 'a'), chunked })
      t.equal(res.status, 413, how)
      t.equal(res.headers['content-type'], direct.headers['content-type'], `${how}: ${direct.headers['content-type']}`)
      t.same(jsonOf(res.body), TOO_LARGE_BODY, `${how}: the contract's body, not nginx's HTML`)
      t.same(corsOf(res.headers), corsOf(direct.headers), `${how}: the platform's CORS headers for an allowed origin`)
      t.equal(res.headers.vary, 'Origin')
      t.equal(res.headers['x-content-type-options'], 'nosniff', `${how}: nosniff, as every answer of the platform`)
      t.equal(res.headers['strict-transport-security'], 'max-age=63072000')
      const id = String(res.headers['x-request-id'])
      t.match(id, UUID, `${how}: an X-Request-Id shaped like the platform's`)
      t.ok(await nginxLogged(id), `${how}: answered by nginx, its id in nginx's access log`)
    }
  }
})

t.test('a body of exactly 65,536 bytes passes nginx and is read by the platform', async (t) => {
  for (const chunked of [false, true]) {
    const res = await request('POST', `${BASE}/api/auth/login`, { ca, headers: JSON_BODY, raw: Buffer.alloc(65_536, 'a'), chunked })
    t.equal(res.status, 400, 'not JSON, and not too large')
    t.equal((jsonOf(res.body) as { code?: string }).code, 'INVALID_JSON')
    t.match(await platformLine(res.headers['x-request-id']), { event: 'http.request', status: 400, path: '/api/auth/login' })
  }
})

t.test('a 10 KiB request header passes nginx and is answered by the platform', async (t) => {
  const res = await request('GET', `${BASE}/api/games`, { ca, headers: { 'x-big': 'a'.repeat(10 * 1024) } })
  t.equal(res.status, 200)
  t.match(jsonOf(res.body), { success: true, games: [{}] })
  t.match(await platformLine(res.headers['x-request-id']), { event: 'http.request', status: 200, path: '/api/games' })
})

t.test('headers over 16 KiB are 431 HEADERS_TOO_LARGE in JSON through nginx, as from the platform directly', async (t) => {
  const KiB = 1024
  const headers15 = (count: number) => Object.fromEntries(Array.from({ length: count }, (_, i) => [`x-big-${i}`, 'a'.repeat(15 * KiB)]))
  const cases: { name: string; path: string; headers: Record<string, string>; raw?: Buffer; answeredBy: 'platform' | 'nginx' }[] = [
    { name: 'one 17 KiB header', path: '/api/games', headers: { 'x-big': 'a'.repeat(17 * KiB) }, answeredBy: 'platform' },
    { name: 'a 20 KiB URL', path: `/api/games?x=${'a'.repeat(20 * KiB)}`, headers: {}, answeredBy: 'platform' },
    // The most nginx passes on: a body held in memory goes out with the headers in one write, so
    // the platform's early 431 and close cannot cut nginx's write short (which nginx answers 502).
    { name: 'eight 15 KiB headers and a 64 KiB body', path: '/api/auth/login', headers: { ...headers15(8), ...JSON_BODY }, raw: Buffer.alloc(65_536, 'a'), answeredBy: 'platform' },
    { name: 'one 40 KiB header', path: '/api/games', headers: { 'x-big': 'a'.repeat(40 * KiB), origin: ORIGIN }, answeredBy: 'nginx' },
    { name: 'ten 15 KiB headers', path: '/api/games', headers: headers15(10), answeredBy: 'nginx' },
    { name: 'a 40 KiB URL', path: `/api/games?x=${'a'.repeat(40 * KiB)}`, headers: {}, answeredBy: 'nginx' },
  ]
  for (const { name, path, headers, raw, answeredBy } of cases) {
    // Directly without the body: the platform answers on the headers alone, and closes.
    const direct = await request(raw ? 'POST' : 'GET', `${platform.url}${path}`, { headers })
    t.equal(direct.status, 431, `${name}: the platform answers 431 directly`)
    t.same(jsonOf(direct.body), TOO_LARGE_HEADERS)
    const res = await request(raw ? 'POST' : 'GET', `${BASE}${path}`, { ca, headers, raw })
    t.equal(res.status, 431, `${name}: 431 through nginx`)
    t.equal(res.headers['content-type'], direct.headers['content-type'])
    t.same(jsonOf(res.body), TOO_LARGE_HEADERS, `${name}: the contract's body, not nginx's HTML`)
    t.same(corsOf(res.headers), corsOf(direct.headers), `${name}: the platform's CORS headers (none: its headers were not read)`)
    t.equal(res.headers.vary, 'Origin')
    t.equal(res.headers['x-content-type-options'], 'nosniff', `${name}: nosniff`)
    const id = String(res.headers['x-request-id'])
    t.match(id, UUID)
    if (answeredBy === 'platform') {
      t.match(await platformLine(id), { event: 'http.client_error', status: 431 }, `${name}: answered by the platform`)
    } else {
      t.ok(await nginxLogged(id), `${name}: answered by nginx, its id in nginx's access log`)
    }
  }
})

/** Sign `DEVELOPER` up (or in) through the proxy; the session cookie. */
async function signIn(): Promise<string> {
  let res = await request('POST', `${BASE}/api/auth/register`, { ca, headers: { origin: ORIGIN }, body: DEVELOPER })
  if (res.status === 409) res = await request('POST', `${BASE}/api/auth/login`, { ca, headers: { origin: ORIGIN }, body: DEVELOPER })
  if (res.status !== 200) throw new Error(`sign-in: ${res.status} ${res.body}`)
  return String(res.headers['set-cookie']).split(';')[0]!
}

async function getTicket(cookie: string): Promise<string> {
  const res = await request('POST', `${BASE}/dev/terminal/ticket`, { ca, headers: { origin: ORIGIN, cookie } })
  if (res.status !== 200) throw new Error(`ticket: ${res.status} ${res.body}`)
  return (JSON.parse(res.body) as { ticket: string }).ticket
}

/** Open wss://…/terminal-ws/ws through nginx; resolves open, or rejects with the HTTP status. */
async function openTerminal(ticket: string, origin = ORIGIN): Promise<TermClient> {
  const ws = new WebSocket(`wss://127.0.0.1:${ports.https}/terminal-ws/ws?ticket=${encodeURIComponent(ticket)}`, { origin, ca })
  const client = new TermClient(ws)
  await client.opened
  return client
}

t.test('GET /terminal-ws/ through the proxy reaches the bridge root (health)', async (t) => {
  const res = await request('GET', `${BASE}/terminal-ws/`, { ca })
  t.equal(res.status, 200)
  const body = JSON.parse(res.body)
  t.same(Object.keys(body).sort(), ['connections', 'max', 'status', 'uptime'])
  t.match(body, { status: 'ok', connections: 0, max: 4 })
})

t.test('sign-up, ticket and a terminal session over wss://…/terminal-ws/ws that runs a command', async (t) => {
  const cookie = await signIn()
  t.match(cookie, /^playfield_session=/)
  const page = await request('GET', `${BASE}/dev/terminal`, { ca, headers: { cookie } })
  t.equal(page.status, 200, 'the developer passes the gate')
  const term = await openTerminal(await getTicket(cookie))
  term.send({ type: 'create', cols: 100, rows: 30 })
  const created = await term.frame('created')
  t.ok(Number.isInteger(created.pid), 'created with a pid')
  t.match(await term.run('echo $((6 * 7))'), /^42\r?\n/, 'the command ran and its output came back through nginx')
  t.match(await term.run('stty size'), /^30 100\r?\n/)
  // As root, both ways of starting the bridge give shells the shell account; otherwise our own.
  const account = process.getuid?.() === 0 ? SHELL_USER : userInfo().username
  t.match(await term.run('id -un'), new RegExp(`^${account}\\r?\\n`), 'the shell runs as the unprivileged account')
  term.send({ type: 'input', data: 'exit 3\r' })
  t.match(await term.frame('exit'), { type: 'exit', code: 3 })
  term.ws.close()
  await term.whenClosed()
  // The ticket travelled in the query string; nginx logs the request without it.
  let logged = ''
  for (let i = 0; i < 100 && !logged.includes('/terminal-ws/ws'); i++) {
    await sleep(20)
    logged = nginx.accessLog()
  }
  t.match(logged, /"GET \/terminal-ws\/ws HTTP\/1\.1" 101 /, 'the upgrade is logged')
  t.notOk(logged.includes('ticket='), 'without its ticket')
})

t.test('the Origin check holds through the proxy: a foreign Origin is refused with 403', async (t) => {
  const cookie = await signIn()
  const ticket = await getTicket(cookie)
  await t.rejects(openTerminal(ticket, 'https://evil.example'), { message: 'HTTP 403' })
  const foreignTicket = await request('POST', `${BASE}/dev/terminal/ticket`, { ca, headers: { origin: 'https://evil.example', cookie } })
  t.equal(foreignTicket.status, 403)
  t.equal(JSON.parse(foreignTicket.body).code, 'FORBIDDEN_ORIGIN')
})

t.test('a frame over 1 MiB is closed with 1009 through the proxy, not reset', async (t) => {
  const cookie = await signIn()
  for (let i = 0; i < 3; i++) {
    const term = await openTerminal(await getTicket(cookie))
    term.send({ type: 'create' })
    await term.frame('created')
    term.send({ type: 'input', data: 'x'.repeat(1024 * 1024 + 1) })
    t.equal((await term.whenClosed()).code, 1009, `try ${i + 1}`)
  }
})

t.test('a session open when the bridge stops is closed with 1001 through the proxy', async (t) => {
  const term = await openTerminal(await getTicket(await signIn()))
  term.send({ type: 'create' })
  await term.frame('created')
  const stopped = bridge.stop()
  t.equal((await term.whenClosed()).code, 1001)
  t.same(await stopped, { code: 0, signal: null })
})

t.test('with the bridge down, /terminal-ws/ answers 502 and the platform keeps serving', async (t) => {
  await bridge.stop()
  const health = await request('GET', `${BASE}/terminal-ws/`, { ca })
  t.equal(health.status, 502)
  const upgrade = await request('GET', `${BASE}/terminal-ws/ws`, {
    ca,
    headers: { connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==' },
  })
  t.equal(upgrade.status, 502)
  const games = await request('GET', `${BASE}/api/games`, { ca })
  t.equal(games.status, 200)
  t.match(nginx.errorLog(), /connect\(\) failed \(111: Connection refused\)/)
})

t.test('the shipped site keeps terminal connections open for 86400 s and sends the prefix to the bridge root', async (t) => {
  const site = readFileSync(SITE_CONF, 'utf8')
  const block = /location \/terminal-ws\/ \{([^}]*)\}/.exec(site)?.[1] ?? ''
  const directives = block.split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'))
  t.same(directives.filter((d) => /^proxy_(read|send)_timeout /.test(d)).sort(), ['proxy_read_timeout 86400s;', 'proxy_send_timeout 86400s;'])
  t.ok(directives.includes('proxy_pass http://playfield_terminal/;'), 'prefix stripped: the bridge sees /ws')
  t.match(site, /upstream playfield_terminal \{\s*server 127\.0\.0\.1:7681;/)
  t.ok(directives.includes('proxy_set_header Upgrade $http_upgrade;'))
  t.ok(directives.includes('proxy_set_header Connection $playfield_connection_upgrade;'))
  t.ok(directives.includes('proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;'))
  t.ok(directives.includes('proxy_set_header X-Forwarded-Proto $scheme;'))
  t.ok(directives.includes('proxy_set_header Cookie "";'), 'the session cookie never reaches the bridge')
  t.ok(directives.includes('proxy_set_header Authorization "";'), 'nor an Authorization header')
  t.ok(directives.includes('access_log /var/log/nginx/playfield.access.log playfield_ticketless;'))
})

t.test('the shipped site connects to the platform from the one address its unit trusts', async (t) => {
  const site = readFileSync(SITE_CONF, 'utf8')
  const blocks = [...site.matchAll(/\n    location \/ \{([^}]*)\}/g)].map((m) => m[1]!).filter((b) => b.includes('proxy_pass http://playfield_platform;'))
  t.equal(blocks.length, 1, 'one location sends to the platform')
  const block = blocks[0] ?? ''
  const bind = /^\s*proxy_bind (\S+);/m.exec(block)?.[1]
  t.equal(bind, UNIT_TRUST_PROXY, 'proxy_bind is TRUST_PROXY')
  t.match(bind, /^127\.\d+\.\d+\.\d+$/, 'a loopback address of its own')
  t.not(bind, '127.0.0.1', 'not the address every local process connects from')
})

// Last: it stops the platform.
t.test('with the platform down, /api/ and the ticket answer 503 BACKEND_UNAVAILABLE in JSON through nginx, a page answers HTML', async (t) => {
  const before = await request('GET', `${BASE}/api/games`, { ca })
  t.equal(before.status, 200)
  t.same(await platform.stop(), { code: 0, signal: null })
  const UNAVAILABLE = { error: 'the platform is not answering; try again shortly', code: 'BACKEND_UNAVAILABLE' }
  // M-SEARCH: a method with a hyphen (Node's parser takes it; the platform answers 405) is still an API request.
  for (const [method, path] of [['GET', '/api/games'], ['POST', '/api/auth/login'], ['POST', '/dev/terminal/ticket'], ['GET', '/api/leaderboards/x?limit=5'], ['M-SEARCH', '/api/games']] as const) {
    const res = await request(method, `${BASE}${path}`, { ca, headers: JSON_BODY, raw: method === 'POST' ? Buffer.from('{}') : undefined })
    t.equal(res.status, 503, `${method} ${path}: 503`)
    t.equal(res.headers['content-type'], 'application/json; charset=utf-8', `${method} ${path}: JSON`)
    t.same(jsonOf(res.body), UNAVAILABLE, `${method} ${path}: the contract's body, not nginx's HTML`)
    t.same(corsOf(res.headers), CORS, `${method} ${path}: readable by a page on an allowed origin`)
    t.equal(res.headers['retry-after'], '5')
    t.equal(res.headers['cache-control'], 'no-store')
    t.equal(res.headers['x-content-type-options'], 'nosniff')
    t.equal(res.headers.vary, 'Origin')
    t.equal(res.headers['strict-transport-security'], 'max-age=63072000')
    const id = String(res.headers['x-request-id'])
    t.match(id, UUID)
    t.ok(await nginxLogged(id), `${method} ${path}: its id in nginx's access log`)
  }
  // A page on an allowed origin sends a preflight first: it passes, so the request after it reads the 503.
  const preflight = (origin: string): Promise<{ status: number; headers: Record<string, string | string[] | undefined> }> =>
    request('OPTIONS', `${BASE}/api/leaderboards/submit`, { ca, headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' } })
  const allowed = await preflight(ORIGIN)
  t.equal(allowed.status, 204, 'a preflight from an allowed origin: 204')
  t.same(corsOf(allowed.headers), { ...CORS, 'access-control-allow-methods': 'GET, HEAD, POST, PUT, DELETE, OPTIONS' }, 'with the platform\'s preflight headers')
  t.equal(allowed.headers['access-control-allow-headers'], 'content-type')
  const refused = await preflight('https://elsewhere.example')
  t.equal(refused.status, 204, 'from another origin: 204 too, as from the platform')
  t.same(corsOf(refused.headers), {}, 'without CORS headers, so the browser stops there')
  const ignored = await request('GET', `${BASE}/api/games`, { ca, headers: { origin: 'https://elsewhere.example' } })
  t.equal(ignored.status, 503)
  t.same(corsOf(ignored.headers), {}, 'a 503 to another origin carries no CORS headers')
  for (const path of ['/dev/terminal', '/']) {
    const page = await request('GET', `${BASE}${path}`, { ca })
    t.equal(page.status, 503, `${path}: 503`)
    t.equal(page.headers['content-type'], 'text/html; charset=utf-8')
    t.match(page.body, /Playfield is not answering just now/)
    t.equal(page.headers['retry-after'], '5')
  }
  const direct = await request('GET', `${BASE}/.playfield-nginx/unavailable-api`, { ca })
  t.equal(direct.status, 404, 'the answer is internal: not a page of its own')
})
