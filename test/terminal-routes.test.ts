import { execFile, execFileSync, spawnSync } from 'node:child_process'
import { setTimeout as sleep } from 'node:timers/promises'
import { createHash } from 'node:crypto'
import net from 'node:net'
import { cpSync, readFileSync, rmSync, symlinkSync } from 'node:fs'
import path from 'node:path'
import { promisify } from 'node:util'
import { brotliDecompressSync, gunzipSync } from 'node:zlib'
import t from 'tap'
import { Client, ROOT, runUsersOk, startPlatform, tempDir, type RunningProcess } from './helpers/platform.js'
import { alive, maskedText, ORIGIN, startBridge, TermClient, until, upgradeAnswer, upgradeStatus } from './helpers/terminal.js'
import { expectError } from './helpers/accounts.js'
import { rawExchange, rawRequest } from './helpers/raw-http.js'
import { WebSocket } from 'ws'

interface Product {
  platform: RunningProcess
  bridge: RunningProcess
  dataDir: string
}

/** Bridge and platform sharing one DATA_DIR and so one generated ticket secret (no TERMINAL_TICKET_SECRET). */
async function startProduct(env: Record<string, string> = {}): Promise<Product> {
  const dataDir = tempDir()
  const bridge = await startBridge({ DATA_DIR: dataDir, TERMINAL_TICKET_SECRET: undefined })
  const platform = await startPlatform({ dataDir, env: { TERMINAL_PORT: String(bridge.port), ...env } })
  // The platform's own origin is what its page's WebSocket carries; the bridge allows ORIGIN.
  return { platform, bridge, dataDir }
}

const users = (dataDir: string, ...args: string[]): Promise<void> => runUsersOk({ DATA_DIR: dataDir }, ...args)

const product = await startProduct()
t.teardown(async () => {
  await product.platform.stop()
  await product.bridge.stop()
})
const base = product.platform.url

async function register(name: string): Promise<Client> {
  const client = new Client(base, ORIGIN)
  const res = await client.post('/api/auth/register', { username: name, password: 'correct horse battery' })
  if (res.status !== 200) throw new Error(`register ${name}: ${res.status} ${await res.text()}`)
  return client
}

t.test('GET /dev/terminal without a session is a 401 HTML page; the ticket is 401 NO_SESSION', async (t) => {
  const anon = new Client(base, ORIGIN)
  const page = await anon.get('/dev/terminal')
  t.equal(page.status, 401)
  t.match(page.headers.get('content-type'), /^text\/html/)
  t.match(page.headers.get('content-security-policy'), /script-src 'self'/)
  const text = await page.text()
  t.match(text, /<h1>401 Sign in required<\/h1>[\s\S]*Sign in first/)
  // The sign-in form: sent by its script as JSON, never natively (and then not in the URL).
  t.match(text, /<form id="signin" method="post">[\s\S]*name="password" type="password"/)
  t.match(page.headers.get('content-security-policy'), /form-action 'none'/)
  const script = /<script src="(\/dev\/terminal\/assets\/signin\.js\?v=[^"]+)"><\/script>/.exec(text)?.[1]
  t.ok(script, 'the page names its script')
  const asset = await anon.get(script!)
  t.equal(asset.status, 200)
  t.match(await asset.text(), /\/api\/auth\/login/)
  const ticket = await anon.post('/dev/terminal/ticket')
  t.equal(ticket.status, 401)
  t.match(ticket.headers.get('content-type'), /^application\/json/)
  t.same(await ticket.json(), { error: 'no session', code: 'NO_SESSION' })
})

t.test('a signed-in user without admission gets a 403 page that says why, and 403 FORBIDDEN for a ticket', async (t) => {
  const guest = new Client(base, ORIGIN)
  t.equal((await guest.post('/api/auth/guest')).status, 200)
  const page = await guest.get('/dev/terminal')
  t.equal(page.status, 403)
  t.match(page.headers.get('content-type'), /^text\/html/)
  t.match(await page.text(), /<h1>403 Developer access required<\/h1>[\s\S]*neither the developer nor the admin role/)
  const ticket = await guest.post('/dev/terminal/ticket')
  t.equal(ticket.status, 403)
  t.same(await ticket.json(), { error: 'developer access required', code: 'FORBIDDEN' })
})

t.test('a developer gets the page and tickets; the grant and the revoke work at once', async (t) => {
  const dev = await register('terminal_dev')
  t.equal((await dev.get('/dev/terminal')).status, 403, 'before the grant')
  await users(product.dataDir, 'grant', 'terminal_dev', 'developer')
  const page = await dev.get('/dev/terminal')
  t.equal(page.status, 200)
  const csp = page.headers.get('content-security-policy') ?? ''
  t.match(csp, /default-src 'none'/)
  t.match(csp, /script-src 'self'(;|$)/, 'scripts from this origin only')
  t.match(csp, /connect-src 'self'/)
  t.equal(page.headers.get('cache-control'), 'no-store')
  t.equal(page.headers.get('x-content-type-options'), 'nosniff')
  t.equal(page.headers.get('x-frame-options'), 'DENY')
  t.equal(page.headers.get('referrer-policy'), 'no-referrer')
  const body = await page.text()
  for (const asset of ['xterm.js', 'addon-fit.js', 'addon-unicode11.js', 'widths.js', 'width-provider.js', 'early-input.js', 'terminal.js', 'xterm.css', 'terminal.css']) t.match(body, `/dev/terminal/assets/${asset}`)
  t.notMatch(body, /https?:\/\//, 'nothing from a CDN')
  const before = Date.now()
  const res = await dev.post('/dev/terminal/ticket')
  t.equal(res.status, 200)
  t.equal(res.headers.get('cache-control'), 'no-store', 'a one-use credential is kept by no cache')
  const answer = await res.json() as Record<string, unknown>
  t.same(Object.keys(answer).sort(), ['expiresAt', 'success', 'ticket'])
  t.equal(answer.success, true)
  t.match(answer.ticket, /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/)
  const expires = Date.parse(answer.expiresAt as string)
  t.ok(expires > before && expires <= Date.now() + 60_000, 'expires within 60 s')
  await users(product.dataDir, 'revoke', 'terminal_dev', 'developer')
  t.equal((await dev.get('/dev/terminal')).status, 403, 'after the revoke')
  t.equal((await dev.post('/dev/terminal/ticket')).status, 403)
})

t.test('the admin role opens the gate as the developer role does, and its revoke closes it at once', async (t) => {
  const admin = await register('terminal_admin_only')
  t.equal((await admin.get('/dev/terminal')).status, 403, 'before the grant')
  await users(product.dataDir, 'grant', 'terminal_admin_only', 'admin')
  t.equal((await admin.get('/dev/terminal')).status, 200, 'the page')
  const res = await admin.post('/dev/terminal/ticket')
  t.equal(res.status, 200, 'a ticket')
  t.match(await res.json(), { success: true, ticket: /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/ })
  await users(product.dataDir, 'revoke', 'terminal_admin_only', 'admin')
  t.equal((await admin.get('/dev/terminal')).status, 403, 'after the revoke')
  await expectError(t, await admin.post('/dev/terminal/ticket'), 403, 'FORBIDDEN')
})

t.test('the ticket takes no body or {}: anything else gets the JSON body errors, and no ticket', async (t) => {
  const dev = await register('ticket_body_dev')
  await users(product.dataDir, 'grant', 'ticket_body_dev', 'developer')
  t.equal((await dev.post('/dev/terminal/ticket', {})).status, 200, '{}')
  t.equal((await dev.post('/dev/terminal/ticket', { ignored: true })).status, 200, 'an object: its keys are ignored, as for launch')
  await expectError(t, await dev.post('/dev/terminal/ticket', 'x', { 'content-type': 'text/plain' }), 415, 'UNSUPPORTED_MEDIA_TYPE')
  await expectError(t, await dev.post('/dev/terminal/ticket', '{bad'), 400, 'INVALID_JSON')
  await expectError(t, await dev.post('/dev/terminal/ticket', '[1]'), 400, 'VALIDATION_FAILED')
  await expectError(t, await dev.post('/dev/terminal/ticket', JSON.stringify({ pad: 'x'.repeat(70_000) })), 413, 'PAYLOAD_TOO_LARGE')
  // Who may not have a ticket hears so first, whatever the body, as launch answers 401 first.
  const anon = new Client(base, ORIGIN)
  const outsider = await register('ticket_body_outsider')
  for (const [label, body, headers] of [['null', 'null', {}], ['[]', '[]', {}], ['{bad', '{bad', {}], ['text', '{}', { 'content-type': 'text/plain' }]] as const) {
    await expectError(t, await anon.post('/dev/terminal/ticket', body, headers), 401, 'NO_SESSION', `signed out, body ${label}`)
    await expectError(t, await outsider.post('/dev/terminal/ticket', body, headers), 403, 'FORBIDDEN', `not admitted, body ${label}`)
  }
})

t.test('the ticket asked for by another method is 405 METHOD_NOT_ALLOWED in JSON, with Allow: POST', async (t) => {
  for (const method of ['GET', 'PUT', 'DELETE']) {
    const res = await new Client(base, ORIGIN).request(method, '/dev/terminal/ticket')
    t.equal(res.headers.get('allow'), 'POST', `${method}: Allow`)
    await expectError(t, res, 405, 'METHOD_NOT_ALLOWED', method)
  }
})

t.test('a ticket from a foreign origin is refused by the platform', async (t) => {
  const dev = await register('terminal_admin')
  await users(product.dataDir, 'grant', 'terminal_admin', 'admin')
  const res = await dev.post('/dev/terminal/ticket', undefined, { origin: 'http://evil.example' })
  t.equal(res.status, 403)
  t.match(await res.json(), { code: 'FORBIDDEN_ORIGIN' })
})

t.test('the platform forwards /terminal-ws/ to the bridge: a platform ticket opens a shell there', async (t) => {
  const dev = await register('terminal_proxy')
  await users(product.dataDir, 'grant', 'terminal_proxy', 'developer')
  const { ticket } = await (await dev.post('/dev/terminal/ticket')).json() as { ticket: string }
  const ws = new WebSocket(`ws://127.0.0.1:${product.platform.port}/terminal-ws/ws?ticket=${encodeURIComponent(ticket)}`, { origin: ORIGIN })
  const answered = new Promise<string | undefined>((resolve) => ws.once('upgrade', (res) => resolve(res.headers['x-request-id'] as string | undefined)))
  const c = new TermClient(ws)
  await c.opened
  c.send({ type: 'create', cols: 90, rows: 33 })
  await c.frame('created')
  t.match(await c.run('stty size; echo via-proxy'), /^33 90\r\nvia-proxy/)
  const id = await answered
  t.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, 'the bridge\'s 101 carries the platform\'s X-Request-Id')
  t.notOk(product.platform.logs.some((l) => l.id === id), 'no access-log line while the terminal is open')
  c.ws.close()
  await c.whenClosed()
  const line = () => product.platform.logs.find((l) => l.event === 'http.request' && l.id === id)
  for (let i = 0; i < 250 && !line(); i++) await sleep(20)
  t.match(line(), { event: 'http.request', method: 'GET', path: '/terminal-ws/ws', status: 101, ms: Number, ip: '127.0.0.1' }, 'one access-log line when it closes, without the ticket')
  t.equal(product.platform.logs.filter((l) => l.id === id).length, 1)
  // The bridge logs when its side of the connection closes, which through the proxy can come a
  // little after the client's: wait for the line (up to 5 s) rather than a fixed time.
  const logged = () => product.bridge.logs.find((l) => l.event === 'terminal.session' && l.user === 'terminal_proxy')
  for (let i = 0; i < 250 && !logged(); i++) await sleep(20)
  t.ok(logged(), 'the bridge logged the session with the username from the ticket')
  const spent = await upgradeAnswer(product.platform.port, `/terminal-ws/ws?ticket=${encodeURIComponent(ticket)}`, ORIGIN)
  t.equal(spent.status, 401, 'the ticket was spent')
  for (let i = 0; i < 250 && !product.platform.logs.some((l) => l.id === spent.requestId); i++) await sleep(20)
  t.match(product.platform.logs.filter((l) => l.id === spent.requestId), [{ event: 'http.request', path: '/terminal-ws/ws', status: 401 }], 'a refusal the bridge answers is logged with its status')
  t.equal(await upgradeStatus(product.platform.port, '/terminal-ws/other', ORIGIN), 404, 'bridge paths other than /ws')
  t.equal(await upgradeStatus(product.platform.port, '/api/games', ORIGIN), 200, 'no upgrade outside /terminal-ws/: the plain answer')
  t.equal(await upgradeStatus(product.platform.port, '/api/nowhere', ORIGIN), 404)
  // The tunnel keeps the client's HTTP version, so the bridge refuses an HTTP/1.0 upgrade (RFC 6455 §4.1).
  const { ticket: old } = await (await dev.post('/dev/terminal/ticket')).json() as { ticket: string }
  const answer = await rawExchange(product.platform.port, `GET /terminal-ws/ws?ticket=${encodeURIComponent(old)} HTTP/1.0\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nOrigin: ${ORIGIN}`)
  t.match(answer, /^HTTP\/1\.1 400 Bad Request\r\n/)
  t.equal(answer.slice(answer.indexOf('\r\n\r\n') + 4), 'a WebSocket upgrade needs HTTP/1.1')
  const oldId = /\r\nX-Request-Id: ([^\r]+)\r\n/.exec(answer)?.[1]
  for (let i = 0; i < 250 && !product.platform.logs.some((l) => l.id === oldId); i++) await sleep(20)
  t.match(product.platform.logs.filter((l) => l.id === oldId), [{ event: 'http.request', path: '/terminal-ws/ws', status: 400 }], 'logged with the bridge\'s status')
})

t.test('through the platform too, the bridge refuses a foreign or missing Origin (403), the try spends the ticket, nothing is spawned', async (t) => {
  const dev = await register('terminal_foreign')
  await users(product.dataDir, 'grant', 'terminal_foreign', 'developer')
  const mint = async (): Promise<string> => `/terminal-ws/ws?ticket=${encodeURIComponent(((await (await dev.post('/dev/terminal/ticket')).json()) as { ticket: string }).ticket)}`
  const logged = product.bridge.logs.length
  const foreign = await mint()
  t.equal(await upgradeStatus(product.platform.port, foreign, 'http://evil.example'), 403, 'a foreign Origin')
  t.equal(await upgradeStatus(product.platform.port, await mint(), undefined), 403, 'no Origin')
  t.equal(await upgradeStatus(product.platform.port, foreign, ORIGIN), 401, 'the ticket the foreign page used is spent')
  const refused = () => product.bridge.logs.slice(logged).filter((l) => l.event === 'terminal.refused')
  await until(() => refused().length === 3, 5_000, 'the three refusals logged')
  t.match(refused(), [
    { status: 403, reason: 'origin not allowed', user: 'terminal_foreign', origin: 'http://evil.example' },
    { status: 403, reason: 'origin not allowed', user: 'terminal_foreign', origin: null },
    { status: 401, reason: 'ticket already used' },
  ])
  t.notOk(product.bridge.logs.slice(logged).some((l) => l.event === 'terminal.session'), 'no terminal connection was made')
})

t.test('through the platform too, a frame over 1 MiB closes with 1009 and bad UTF-8 with 1007', async (t) => {
  const dev = await register('terminal_proxy_close')
  await users(product.dataDir, 'grant', 'terminal_proxy_close', 'developer')
  const open = async (): Promise<TermClient> => {
    const { ticket } = await (await dev.post('/dev/terminal/ticket')).json() as { ticket: string }
    const c = new TermClient(new WebSocket(`ws://127.0.0.1:${product.platform.port}/terminal-ws/ws?ticket=${encodeURIComponent(ticket)}`, { origin: ORIGIN }))
    await c.opened
    c.send({ type: 'create' })
    await c.frame('created')
    return c
  }
  // The bridge stops reading at the frame's header while the client is still sending it: the
  // close frame must reach the client all the same, not a reset (1006). Several times, as it was a race.
  for (let i = 0; i < 5; i++) {
    const c = await open()
    c.send({ type: 'input', data: 'x'.repeat(1024 * 1024 + 1) })
    t.equal((await c.whenClosed()).code, 1009, `over 1 MiB, try ${i + 1}`)
  }
  const c = await open()
  c.ws.send(Buffer.from([0x7b, 0xff, 0xfe, 0x7d]), { binary: false })
  t.equal((await c.whenClosed()).code, 1007, 'not UTF-8')
})

/** The page's assets: the file each is, and its Content-Type. */
const ASSET_FILES: Record<string, [string, RegExp]> = {
  'xterm.js': ['node_modules/@xterm/xterm/lib/xterm.js', /^text\/javascript/],
  'xterm.css': ['node_modules/@xterm/xterm/css/xterm.css', /^text\/css/],
  'addon-fit.js': ['node_modules/@xterm/addon-fit/lib/addon-fit.js', /^text\/javascript/],
  'addon-unicode11.js': ['node_modules/@xterm/addon-unicode11/lib/addon-unicode11.js', /^text\/javascript/],
  'widths.js': ['lib/platform/terminal-page/widths.js', /^text\/javascript/],
  'width-provider.js': ['lib/platform/terminal-page/width-provider.js', /^text\/javascript/],
  'early-input.js': ['lib/platform/terminal-page/early-input.js', /^text\/javascript/],
  'terminal.js': ['lib/platform/terminal-page/terminal.js', /^text\/javascript/],
  'terminal.css': ['lib/platform/terminal-page/terminal.css', /^text\/css/],
}

t.test('the page\'s assets come from the installed packages', async (t) => {
  for (const [name, [file, type]] of Object.entries(ASSET_FILES)) {
    const res = await fetch(`${base}/dev/terminal/assets/${name}`)
    t.equal(res.status, 200, name)
    t.match(res.headers.get('content-type'), type)
    t.ok(Buffer.from(await res.arrayBuffer()).equals(readFileSync(path.join(ROOT, file))), `${name} is ${file}`)
  }
  t.equal((await fetch(`${base}/dev/terminal/assets/package.json`)).status, 404)
  t.equal((await fetch(`${base}/dev/terminal/assets/..%2F..%2Fpackage.json`)).status, 404)
})

t.test('a slow network gets the assets compressed: brotli or gzip as accepted, the same bytes, one ETag each, 304 to any', async (t) => {
  for (const [name, [file]] of Object.entries(ASSET_FILES)) {
    const local = readFileSync(path.join(ROOT, file))
    const target = `/dev/terminal/assets/${name}`
    const identity = await rawRequest(base, 'GET', target)
    t.equal(identity.headers['content-encoding'], undefined, `${name}: as is without Accept-Encoding`)
    t.same(identity.body, local)
    const gz = await rawRequest(base, 'GET', target, { 'accept-encoding': 'gzip' })
    t.equal(gz.headers['content-encoding'], 'gzip', `${name}: gzip`)
    t.same(gunzipSync(gz.body), local)
    const br = await rawRequest(base, 'GET', target, { 'accept-encoding': 'gzip, deflate, br, zstd' })
    t.equal(br.headers['content-encoding'], 'br', `${name}: brotli, as chromium asks`)
    t.same(brotliDecompressSync(br.body), local)
    for (const res of [identity, gz, br]) {
      t.equal(res.headers['vary'], 'Accept-Encoding')
      t.equal(res.headers['content-length'], String(res.body.length))
    }
    t.equal(new Set([identity, gz, br].map((r) => r.headers['etag'])).size, 3, `${name}: an ETag per encoding`)
    const again = await rawRequest(base, 'GET', target, { 'accept-encoding': 'br', 'if-none-match': gz.headers['etag']! })
    t.equal(again.status, 304, `${name}: revalidated by any of its tags`)
    t.equal(again.body.length, 0)
    if (name === 'xterm.js') t.ok(br.body.length * 4 < local.length, `xterm.js: ${local.length} bytes, ${gz.body.length} in gzip, ${br.body.length} in brotli`)
  }
  const head = await rawRequest(base, 'HEAD', '/dev/terminal/assets/xterm.js', { 'accept-encoding': 'gzip' })
  t.equal(head.status, 200)
  t.equal(head.headers['content-encoding'], 'gzip', 'HEAD: the headers GET would send')
  t.equal(head.body.length, 0)
})

t.test('the page\'s files are read at the start: a file gone later (npm ci under a running platform) is still served; an install without one does not start', async (t) => {
  // A copy of the product (its built code and the page's files; node_modules shared) whose files
  // the test may take away.
  const copy = tempDir()
  for (const dir of ['dist/bin', 'dist/lib', 'lib/platform/terminal-page']) cpSync(path.join(ROOT, dir), path.join(copy, dir), { recursive: true })
  symlinkSync(path.join(ROOT, 'node_modules'), path.join(copy, 'node_modules'))
  const script = path.join(copy, 'dist/bin/platform.js')
  const page = path.join(copy, 'lib/platform/terminal-page')
  const platform = await startPlatform({ script })
  t.teardown(() => platform.stop())
  for (const name of ['terminal.js', 'signin.js']) rmSync(path.join(page, name))
  for (const name of ['terminal.js', 'signin.js']) {
    const res = await fetch(`${platform.url}/dev/terminal/assets/${name}`)
    t.equal(res.status, 200, `${name}, taken away after the start`)
    t.same(Buffer.from(await res.arrayBuffer()), readFileSync(path.join(ROOT, 'lib/platform/terminal-page', name)), 'as it was at the start')
  }
  const refused = await startPlatform({ script }).then(async (started) => (await started.stop(), new Error('started')), (err: Error) => err)
  t.match(refused.message, /^process exited \(1\) before ready: platform: cannot start: ENOENT: no such file or directory, open '[^']*terminal-page\/terminal\.js'\n$/, 'a start without it: one line, exit 1')
  const checked = spawnSync(process.execPath, [script, 'check'], { cwd: ROOT, encoding: 'utf8', env: { PATH: process.env.PATH, DATA_DIR: tempDir() } })
  t.equal(checked.status, 1, 'bin/platform check says so before a restart')
  t.match(checked.stderr, /^platform: cannot start: ENOENT: no such file or directory, open '[^']*terminal-page\/terminal\.js'\n$/)
})

const widthsFile = readFileSync(path.join(ROOT, 'lib/platform/terminal-page/widths.js'), 'utf8')
const widthsGlibc = /glibc: '([0-9.]+)'/.exec(widthsFile)![1]
const glibcHere = /([0-9]+\.[0-9]+)\s*$/m.exec(execFileSync('ldd', ['--version'], { encoding: 'utf8' }).split('\n')[0]!)?.[1]
t.test('widths.js is what scripts/shell-widths.py writes from this machine\'s glibc', { skip: glibcHere !== widthsGlibc && `the table is glibc ${widthsGlibc}'s; this machine has ${glibcHere}` }, async (t) => {
  t.equal((await promisify(execFile)('python3', [path.join(ROOT, 'scripts/shell-widths.py')])).stdout, widthsFile)
})

t.test('the page names each asset with its content\'s version: that URL is cached for good, any other is checked again', async (t) => {
  const dev = await register('terminal_versions')
  await users(product.dataDir, 'grant', 'terminal_versions', 'developer')
  const body = await (await dev.get('/dev/terminal')).text()
  const urls = [...body.matchAll(/"(\/dev\/terminal\/assets\/[^"]+)"/g)].map((m) => m[1]!)
  t.same(urls.map((u) => u.replace(/^\/dev\/terminal\/assets\/|\?.*$/g, '')).sort(), Object.keys(ASSET_FILES).sort(), 'every asset')
  for (const url of urls) {
    const [file, version] = url.replace('/dev/terminal/assets/', '').split('?v=')
    const local = readFileSync(path.join(ROOT, ASSET_FILES[file!]![0]))
    t.equal(version, createHash('sha256').update(local).digest('base64url').slice(0, 12), `${file}: the version is the content's`)
    const res = await fetch(`${base}${url}`)
    t.equal(res.headers.get('cache-control'), 'public, max-age=31536000, immutable', `${file}: cached for good`)
    t.equal((await fetch(`${base}/dev/terminal/assets/${file}`)).headers.get('cache-control'), 'no-cache', `${file} without a version: checked again`)
    t.equal((await fetch(`${base}/dev/terminal/assets/${file}?v=old`)).headers.get('cache-control'), 'no-cache', `${file} with another version: checked again`)
  }
})

t.test('DEV_ACCESS_USERS admits ids exactly and usernames ignoring case; DEV_ACCESS_ALL admits everyone', async (t) => {
  const dataDir = tempDir()
  const probe = await startPlatform({ dataDir })
  const named = new Client(probe.url, ORIGIN)
  await named.post('/api/auth/register', { username: 'Listed_Dev', password: 'correct horse battery' })
  const byId = new Client(probe.url, ORIGIN)
  const session = await (await byId.post('/api/auth/guest')).json() as { user: { id: string } }
  await probe.stop()
  const listed = await startPlatform({ dataDir, env: { DEV_ACCESS_USERS: `listed_dev,${session.user.id}` } })
  t.teardown(() => listed.stop())
  for (const client of [named, byId]) client.base = listed.url
  t.equal((await named.get('/dev/terminal')).status, 200, 'username, other case')
  t.equal((await byId.get('/dev/terminal')).status, 200, 'user id')
  const other = new Client(listed.url, ORIGIN)
  await other.post('/api/auth/guest')
  t.equal((await other.get('/dev/terminal')).status, 403, 'not listed')
  // Ids match exactly, and are lower case: an upper-case one, which would admit no one, stops the platform.
  const upper = session.user.id.toUpperCase()
  const refused = await startPlatform({ dataDir, env: { DEV_ACCESS_USERS: upper } }).then(() => new Error('started'), (err: Error) => err)
  t.equal(refused.message, `process exited (2) before ready: config: DEV_ACCESS_USERS: ${JSON.stringify(upper)} is invalid; expected a comma list of user ids (lower-case UUIDs) or usernames (3-24 of A-Z a-z 0-9 _ -), spaces only around the commas\n`, 'an upper-case id is a configuration error')
  const all = await startPlatform({ dataDir, env: { DEV_ACCESS_ALL: 'true' } })
  t.teardown(() => all.stop())
  other.base = all.url
  t.equal((await other.get('/dev/terminal')).status, 200, 'DEV_ACCESS_ALL')
  t.equal((await new Client(all.url, ORIGIN).get('/dev/terminal')).status, 401, 'still needs a session')
})

t.test('a DEV_ACCESS_USERS entry that is only part of a user id admits no one', async (t) => {
  // An entry shaped like a username ("3-24 of A-Z a-z 0-9 _ -") may also be a piece of some id:
  // ids match exactly, so it names at most the account of that name.
  const dataDir = tempDir()
  const probe = await startPlatform({ dataDir })
  const guest = new Client(probe.url, ORIGIN)
  const { user } = await (await guest.post('/api/auth/guest')).json() as { user: { id: string } }
  await probe.stop()
  const piece = user.id.slice(0, 8)
  const listed = await startPlatform({ dataDir, env: { DEV_ACCESS_USERS: piece } })
  t.teardown(() => listed.stop())
  guest.base = listed.url
  t.equal((await guest.get('/api/auth/session')).status, 200, 'the guest is signed in')
  t.equal((await guest.get('/dev/terminal')).status, 403, `"${piece}" is not the id ${user.id}`)
  await expectError(t, await guest.post('/dev/terminal/ticket'), 403, 'FORBIDDEN')
})

t.test('DEV_ACCESS_USERS is matched against the account\'s name now, not the name a session signed in with', async (t) => {
  const dataDir = tempDir()
  const unlisted = await startPlatform({ dataDir })
  const first = new Client(unlisted.url, ORIGIN)
  t.equal((await first.post('/api/auth/register', { username: 'gate_old', password: 'correct horse battery' })).status, 200)
  const second = new Client(unlisted.url, ORIGIN)
  t.equal((await second.post('/api/auth/login', { username: 'gate_old', password: 'correct horse battery' })).status, 200)
  t.equal((await first.put('/api/user/username', { username: 'gate_new' })).status, 200, 'renamed in another session')
  await unlisted.stop()
  const platform = await startPlatform({ dataDir, env: { DEV_ACCESS_USERS: 'gate_old' } })
  t.teardown(() => platform.stop())
  for (const client of [first, second]) client.base = platform.url
  t.equal((await second.get('/dev/terminal')).status, 403, 'the session that signed in as gate_old: no longer listed')
  t.equal((await second.post('/dev/terminal/ticket')).status, 403, 'and no ticket')
})

t.test('a name DEV_ACCESS_USERS lists stays with its account: no rename into it or out of it', async (t) => {
  const platform = await startPlatform({ env: { DEV_ACCESS_USERS: 'Pinned_Dev,Unclaimed_Dev' } })
  t.teardown(() => platform.stop())
  const dev = new Client(platform.url, ORIGIN)
  t.equal((await dev.post('/api/auth/register', { username: 'pinned_dev', password: 'correct horse battery' })).status, 200)
  t.equal((await dev.get('/dev/terminal')).status, 200, 'listed, ignoring case')
  const other = new Client(platform.url, ORIGIN)
  await other.post('/api/auth/guest')
  const before = await (await other.get('/api/auth/session')).json() as { user: { username: string } }
  await expectError(t, await other.put('/api/user/username', { username: 'PINNED_DEV' }), 409, 'USERNAME_TAKEN')
  // A listed name no account holds yet is refused too: a rename would hand the shell to whoever asks first.
  const free = await expectError(t, await other.put('/api/user/username', { username: 'unclaimed_dev' }), 409, 'USERNAME_TAKEN', 'a listed name nobody holds')
  t.equal(free.error, 'the username "unclaimed_dev" is taken', 'the same answer as for a name someone holds')
  t.equal((await other.get('/dev/terminal')).status, 403, 'and no admission')
  await expectError(t, await dev.put('/api/user/username', { username: 'pinned_dev_2' }), 403, 'FORBIDDEN')
  t.equal((await dev.put('/api/user/username', { username: 'Pinned_Dev' })).status, 200, 'a change of case is no change of name')
  t.equal((await dev.get('/dev/terminal')).status, 200, 'still admitted')
  t.same((await (await other.get('/api/auth/session')).json() as { user: { username: string } }).user.username, before.user.username, 'the refused rename changed nothing')
  for (const name of ['guest_free1', 'guest_free2', 'guest_free3']) {
    t.equal((await other.put('/api/user/username', { username: name })).status, 200, `${name}: the refusals spent nothing`)
  }
})

t.test('with the bridge down, the upgrade through the platform is 502', async (t) => {
  const dataDir = tempDir()
  const bridge = await startBridge({ DATA_DIR: dataDir })
  const port = bridge.port
  await bridge.stop()
  const platform = await startPlatform({ dataDir, env: { TERMINAL_PORT: String(port) } })
  t.teardown(() => platform.stop())
  const answer = await upgradeAnswer(platform.port, '/terminal-ws/ws?ticket=x', ORIGIN)
  t.equal(answer.status, 502)
  t.match(answer.requestId, /^[0-9a-f-]{36}$/, 'the 502 carries X-Request-Id')
  for (let i = 0; i < 250 && !platform.logs.some((l) => l.id === answer.requestId); i++) await sleep(20)
  t.match(platform.logs.filter((l) => l.id === answer.requestId), [{ event: 'http.request', method: 'GET', path: '/terminal-ws/ws', status: 502 }], 'and its access-log line')
})

t.test('a platform stopping cuts the terminals it forwards after 1 s, each logged, even one whose client reads nothing', async (t) => {
  const own = await startProduct()
  t.teardown(() => own.bridge.stop())
  const client = new Client(own.platform.url, ORIGIN)
  t.equal((await client.post('/api/auth/register', { username: 'tunnel_cut', password: 'correct horse battery' })).status, 200)
  await users(own.dataDir, 'grant', 'tunnel_cut', 'developer')
  const { ticket } = await (await client.post('/dev/terminal/ticket')).json() as { ticket: string }
  const ws = new WebSocket(`ws://127.0.0.1:${own.platform.port}/terminal-ws/ws?ticket=${encodeURIComponent(ticket)}`, { origin: ORIGIN })
  const c = new TermClient(ws)
  await c.opened
  c.send({ type: 'create' })
  const pid = (await c.frame('created')).pid as number
  // The client stops reading while the shell floods: the tunnel backs up.
  c.send({ type: 'input', data: 'yes 0123456789abcdef\r' })
  await sleep(300)
  ;(ws as unknown as { _socket: { pause(): void } })._socket.pause()
  await sleep(500)
  const started = Date.now()
  t.same(await own.platform.stop('SIGTERM'), { code: 0, signal: null })
  const took = Date.now() - started
  t.ok(took >= 900 && took < 5_000, `stopped after the tunnels' second, not the 9 s grace (${took} ms)`)
  // The child's last output can come in after its exit event.
  const lines = (): Record<string, unknown>[] => own.platform.logs.filter((l) => l.event === 'http.request' && l.path === '/terminal-ws/ws')
  await until(() => lines().length > 0, 2_000, 'the access-log line').catch(() => undefined)
  t.match(lines(), [{ status: 101 }], 'the terminal\'s access-log line')
  await until(() => !alive(pid), 5_000, 'the shell to end')
  t.notOk(alive(pid), 'the bridge ended the shell')
  ws.terminate()
})

t.test('a terminal upgrade the platform reads after its SIGTERM is refused, 503, logged', async (t) => {
  const own = await startProduct()
  t.teardown(() => own.bridge.stop())
  const socket = net.connect(own.platform.port, '127.0.0.1')
  await new Promise((resolve) => socket.once('connect', resolve))
  let got = ''
  socket.setEncoding('latin1').on('data', (d: string) => (got += d))
  socket.on('error', () => undefined)
  socket.write(`GET /terminal-ws/ws?ticket=x HTTP/1.1\r\nHost: a\r\nOrigin: ${ORIGIN}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n`)
  await sleep(200)
  const stopped = own.platform.stop('SIGTERM')
  await sleep(200)
  socket.write('Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n')
  await until(() => got.includes('\r\n\r\n'), 5_000, 'the answer').catch(() => undefined)
  t.match(got, /^HTTP\/1\.1 503 /, 'refused')
  const id = /x-request-id: ([0-9a-f-]+)/i.exec(got)?.[1]
  t.ok(id, 'with its X-Request-Id')
  t.same(await stopped, { code: 0, signal: null })
  await until(() => own.platform.logs.some((l) => l.id === id), 2_000, 'the line').catch(() => undefined)
  t.match(own.platform.logs.filter((l) => l.id === id), [{ event: 'http.request', path: '/terminal-ws/ws', status: 503 }], 'logged')
  socket.destroy()
})

t.test('something on the bridge\'s port that closes without answering, or answers what is not HTTP: 502, logged', async (t) => {
  for (const [what, reply] of [['closes', null], ['answers junk', 'SSH-2.0-OpenSSH_9.2\r\n']] as const) {
    const impostor = net.createServer((socket) => socket.once('data', () => (reply === null ? socket.destroy() : socket.end(reply))))
    await new Promise<void>((resolve) => impostor.listen(0, '127.0.0.1', resolve))
    const platform = await startPlatform({ env: { TERMINAL_PORT: String((impostor.address() as net.AddressInfo).port) } })
    const answer = await upgradeAnswer(platform.port, '/terminal-ws/ws?ticket=x', ORIGIN)
    t.equal(answer.status, 502, what)
    t.match(answer.requestId, /^[0-9a-f-]{36}$/, `${what}: the 502 carries X-Request-Id`)
    for (let i = 0; i < 250 && !platform.logs.some((l) => l.id === answer.requestId); i++) await sleep(20)
    t.match(platform.logs.filter((l) => l.id === answer.requestId), [{ event: 'http.request', path: '/terminal-ws/ws', status: 502 }], `${what}: logged`)
    await platform.stop()
    impostor.close()
  }
})

t.test('a request asking for an upgrade the platform does not offer (h2c) is served as plain HTTP/1.1, body and pipelined requests included', async (t) => {
  const body = JSON.stringify({ username: 'nobody_h2c', password: 'not the password' })
  const from = product.platform.logs.length
  const text = await new Promise<string>((resolve, reject) => {
    const socket = net.connect(product.platform.port, '127.0.0.1', () => socket.write(
      // What `curl --http2 -d ...` sends over http://, then a second request on the same connection.
      `POST /api/auth/login HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n` +
        `HTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}` +
        `GET /api/auth/session HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`,
    ))
    let got = ''
    socket.setEncoding('utf8').on('data', (d: string) => (got += d))
    socket.on('close', () => resolve(got))
    socket.on('error', reject)
  })
  const answers = text.split(/(?=HTTP\/1\.1 )/)
  t.equal(answers.length, 2, 'two answers on the connection')
  t.match(answers[0], /^HTTP\/1\.1 401 /, 'the login was read, body and all')
  t.match(answers[0], /\r\nvary: Origin\r\n/i)
  t.match(answers[0], /\r\nx-request-id: [0-9a-f-]{36}\r\n/i)
  t.ok(answers[0]!.endsWith(JSON.stringify({ error: 'wrong username or password', code: 'INVALID_CREDENTIALS' })), 'the contract\'s JSON error')
  t.match(answers[1], /^HTTP\/1\.1 401 [^]*"code":"NO_SESSION"/, 'the pipelined request is answered too')
  t.notMatch(text, /101 Switching Protocols/)
  const logged = (): string[] => product.platform.logs.slice(from).filter((l) => l.event === 'http.request').map((l) => `${l.method} ${l.path} ${l.status}`)
  for (let i = 0; i < 100 && logged().length < 2; i++) await sleep(20)
  t.same(logged(), ['POST /api/auth/login 401', 'GET /api/auth/session 401'], 'both in the access log')
})

t.test('an upgrade request pipelined behind others, or behind another upgrade, is answered in its turn', async (t) => {
  const raw = (bytes: string): Promise<string> => new Promise((resolve, reject) => {
    const socket = net.connect(product.platform.port, '127.0.0.1', () => socket.write(bytes))
    let got = ''
    socket.setEncoding('utf8').on('data', (d: string) => (got += d))
    socket.on('close', () => resolve(got))
    socket.on('error', reject)
  })
  const plain = 'GET /api/games/nope HTTP/1.1\r\nHost: a\r\n\r\n'
  const upgrade = 'GET /api/auth/session HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n\r\n'
  const last = 'GET /api/games/nope-either HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n'
  for (const [label, bytes, codes] of [
    ['plain, upgrade, plain', plain + upgrade + last, ['GAME_NOT_FOUND', 'NO_SESSION', 'GAME_NOT_FOUND']],
    ['plain x3, upgrade, upgrade, plain', plain.repeat(3) + upgrade + upgrade + last, ['GAME_NOT_FOUND', 'GAME_NOT_FOUND', 'GAME_NOT_FOUND', 'NO_SESSION', 'NO_SESSION', 'GAME_NOT_FOUND']],
  ] as const) {
    const text = await raw(bytes)
    t.same([...text.matchAll(/"code":"([A-Z_]+)"/g)].map((m) => m[1]), codes, `${label}: every request answered, in order`)
  }
  // Past Node's default of 2000 header lines the request is read anew with all of them: its
  // Content-Length kept, its body is a body, not a second request.
  const body = 'DELETE /api/auth/session HTTP/1.1\r\nHost: a\r\n\r\n'
  const many = `POST /api/auth/login HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n${'a: 1\r\n'.repeat(2100)}` +
    `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`
  const text = await raw(many + last)
  t.same([...text.matchAll(/"code":"([A-Z_]+)"/g)].map((m) => m[1]), ['INVALID_JSON', 'GAME_NOT_FOUND'], 'the body read as (bad) JSON, then the next request')
})

t.test('a connection asking for h2c at every request is read anew 5 times, the 5th with Connection: close: it cannot pile up listeners', async (t) => {
  const upgrade = 'GET /api/games/nope HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, keep-alive, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n\r\n'
  const text = await new Promise<string>((resolve, reject) => {
    const socket = net.connect(product.platform.port, '127.0.0.1', () => socket.write(upgrade.repeat(12)))
    let got = ''
    socket.setEncoding('utf8').on('data', (d: string) => (got += d))
    socket.on('close', () => resolve(got))
    socket.on('error', reject)
  })
  const answers = text.split(/(?=HTTP\/1\.1 )/)
  t.same(answers.map((a) => /"code":"([A-Z_]+)"/.exec(a)?.[1]), Array(5).fill('GAME_NOT_FOUND'), 'five answered, in order, then the connection closed')
  t.match(answers[4], /\r\nconnection: close\r\n/i, 'the fifth says so')
  t.ok(answers.slice(0, 4).every((a) => /\r\nconnection: keep-alive\r\n/i.test(a)), 'the first four keep the connection')
  await sleep(100)
  t.notMatch(product.platform.stderr(), /MaxListenersExceededWarning/, 'no listener piled up')
})

t.test('a client that resets while its upgrade request waits behind another does not end the platform', async (t) => {
  for (let i = 0; i < 5; i++) {
    // A register takes a while (the password's hash): the upgrade request waits behind it.
    const body = JSON.stringify({ username: `reset_${i}_${Date.now() % 100000}`, password: 'correct horse battery' })
    await new Promise<void>((resolve) => {
      const socket = net.connect(product.platform.port, '127.0.0.1', () => {
        socket.write(`POST /api/auth/register HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}` +
          'GET /api/games HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n\r\n')
        setTimeout(() => socket.resetAndDestroy(), 5)
      })
      socket.on('close', () => resolve()).on('error', () => undefined)
    })
  }
  await sleep(200)
  t.equal((await fetch(`${product.platform.url}/api/games`)).status, 200, 'still serving')
})

t.test('a /terminal-ws/ upgrade pipelined behind a request goes to the bridge after that request\'s answer', async (t) => {
  const text = await new Promise<string>((resolve, reject) => {
    const body = JSON.stringify({ username: `ws_queue_${Date.now() % 100000}`, password: 'correct horse battery' })
    const socket = net.connect(product.platform.port, '127.0.0.1', () => socket.write(
      `POST /api/auth/register HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}` +
        `GET /terminal-ws/ws?ticket=forged HTTP/1.1\r\nHost: a\r\nOrigin: ${ORIGIN}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n` +
        'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n',
    ))
    let got = ''
    socket.setEncoding('utf8').on('data', (d: string) => (got += d))
    socket.on('close', () => resolve(got))
    socket.on('error', reject)
  })
  t.same(text.split(/(?=HTTP\/1\.1 )/).map((a) => a.slice(9, 12)), ['200', '401'], 'the request\'s answer, then the bridge\'s refusal')
})

t.test('frames that arrive in the same write as the upgrade request reach the bridge through the platform', async (t) => {
  // Node hands such bytes to the upgrade handler as its `head`; the proxy must pass them on.
  const dev = await register('terminal_head')
  await users(product.dataDir, 'grant', 'terminal_head', 'developer')
  const { ticket } = await (await dev.post('/dev/terminal/ticket')).json() as { ticket: string }
  const socket = net.connect(product.platform.port, '127.0.0.1')
  await new Promise((resolve) => socket.once('connect', resolve))
  t.teardown(() => socket.destroy())
  let got = ''
  socket.setEncoding('latin1').on('data', (d: string) => (got += d))
  socket.on('error', () => undefined)
  socket.write(Buffer.concat([
    Buffer.from(`GET /terminal-ws/ws?ticket=${encodeURIComponent(ticket)} HTTP/1.1\r\nHost: a\r\nOrigin: ${ORIGIN}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n` +
      'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n'),
    maskedText(JSON.stringify({ type: 'create' })),
    maskedText(JSON.stringify({ type: 'input', data: 'echo head-$((6*7))\r' })),
  ]))
  await until(() => got.includes('head-42'), 10_000, 'the input\'s output').catch(() => undefined)
  t.match(got, /^HTTP\/1\.1 101 /, 'switched')
  t.match(got, /"type":"created"/, 'the create in the request\'s write was read')
  t.match(got, /head-42/, 'and the input after it')
})

t.test('a terminal upgrade pipelined behind answers larger than the socket\'s buffer is read to the end', async (t) => {
  // Node stops reading a socket whose pipelined answers back up; the upgrade must start it again.
  const dev = await register('terminal_pipelined')
  await users(product.dataDir, 'grant', 'terminal_pipelined', 'developer')
  // Answers of half a megabyte each (xterm.js), and a create sent before the 101 is read.
  const asset = 'GET /dev/terminal/assets/xterm.js HTTP/1.1\r\nHost: a\r\n\r\n'
  for (const [round, answers] of [[1, 3], [2, 8], [3, 8]] as const) {
    const { ticket } = await (await dev.post('/dev/terminal/ticket')).json() as { ticket: string }
    const socket = net.connect(product.platform.port, '127.0.0.1')
    await new Promise((resolve) => socket.once('connect', resolve))
    let got = ''
    socket.setEncoding('latin1').on('data', (d: string) => (got += d))
    socket.on('error', () => undefined)
    socket.write(asset.repeat(answers) +
      `GET /terminal-ws/ws?ticket=${encodeURIComponent(ticket)} HTTP/1.1\r\nHost: a\r\nOrigin: ${ORIGIN}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n` +
      'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n')
    socket.write(maskedText(JSON.stringify({ type: 'create' })))
    await until(() => got.includes('"type":"created"'), 10_000, 'created').catch(() => undefined)
    t.match(got, /"type":"created"/, `round ${round}: the create sent before the 101 was read`)
    socket.write(maskedText(JSON.stringify({ type: 'input', data: 'echo pipelined-$((6*7))\r' })))
    await until(() => got.includes('pipelined-42'), 10_000, 'the later input\'s output').catch(() => undefined)
    t.match(got, /pipelined-42/, `round ${round}: input sent after the upgrade reaches the shell`)
    t.equal(got.split('HTTP/1.1 200 ').length - 1, answers, `round ${round}: the answers came first`)
    socket.destroy()
  }
})

t.test('a request read anew without its Upgrade gets the full request time, not the keep-alive time of the answer before it', async (t) => {
  const body = JSON.stringify({ username: 'nobody_slow', password: 'not the password' })
  const text = await new Promise<string>((resolve, reject) => {
    const socket = net.connect(product.platform.port, '127.0.0.1', () => {
      socket.write('GET /api/games/nope HTTP/1.1\r\nHost: a\r\n\r\n' +
        `POST /api/auth/login HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, close\r\nUpgrade: h2c\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`)
      // Past the 5 s keep-alive time, within the 30 s a request has.
      setTimeout(() => socket.write(body), 6_500)
    })
    let got = ''
    socket.setEncoding('utf8').on('data', (d: string) => (got += d))
    socket.on('close', () => resolve(got))
    socket.on('error', reject)
  })
  t.same([...text.matchAll(/"code":"([A-Z_]+)"/g)].map((m) => m[1]), ['GAME_NOT_FOUND', 'INVALID_CREDENTIALS'], 'both answered')
})

t.test('the platform forwards the upgrade as it came, less its cookies and Authorization', async (t) => {
  const heads: string[] = []
  const upstream = net.createServer((socket) => {
    let text = ''
    socket.setEncoding('latin1').on('data', (d: string) => {
      text += d
      if (text.includes('\r\n\r\n')) {
        heads.push(text)
        socket.end('HTTP/1.1 418 I\'m a teapot\r\nContent-Length: 0\r\nConnection: close\r\n\r\n')
      }
    })
  })
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve))
  t.teardown(() => upstream.close())
  const platform = await startPlatform({ env: { TERMINAL_PORT: String((upstream.address() as net.AddressInfo).port) } })
  t.teardown(() => platform.stop())
  const answer = await rawExchange(
    platform.port,
    `GET /terminal-ws/ws?ticket=abc HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n` +
      `Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nOrigin: ${ORIGIN}\r\nCookie: playfield_session=sealed-value\r\ncookie: other=1\r\nAuthorization: Bearer backend-token-value\r\nX-Extra: kept`,
  )
  t.match(answer, /^HTTP\/1\.1 418 /, 'the upstream answer comes back')
  t.equal(heads.length, 1)
  t.match(heads[0], /^GET \/ws\?ticket=abc HTTP\/1\.1\r\n/, 'the prefix is stripped')
  t.match(heads[0], new RegExp(`\\r\\nOrigin: ${ORIGIN.replace(/[.]/g, '\\.')}\\r\\n`))
  t.match(heads[0], /\r\nX-Extra: kept\r\n/)
  t.notMatch(heads[0], /cookie|sealed-value/i, 'no cookie reaches the bridge')
  t.notMatch(heads[0], /authorization|backend-token-value/i, 'nor an Authorization header')
})
