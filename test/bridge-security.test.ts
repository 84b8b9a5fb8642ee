import { execFileSync } from 'node:child_process'
import { setTimeout as sleep } from 'node:timers/promises'
import { chmodSync, copyFileSync, mkdirSync, readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import t from 'tap'
import { mintTicket } from '../lib/ticket.js'
import { BRIDGE_JS, startPlatform, tempDir } from './helpers/platform.js'
import { rawBytes, rawExchange, trickle, waitForLog } from './helpers/raw-http.js'
import { connect, ensureShellUser, ORIGIN, SHELL_USER, startBridge, ticket, TICKET_SECRET, uidOf, upgradeStatus } from './helpers/terminal.js'

/** Pids whose parent is `pid`. */
function childrenOf(pid: number): number[] {
  const children: number[] = []
  for (const name of readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(name)) continue
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8')
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) children.push(Number(name))
    } catch {
      // gone
    }
  }
  return children
}

const beforeStart = Date.now()
const bridge = await startBridge({ PLAYFIELD_CANARY: 'canary-secret-value', TERMINAL_MAX_CONN: '8' })
t.teardown(() => bridge.stop())
const health = async (): Promise<Record<string, unknown>> => (await fetch(bridge.url + '/')).json() as Promise<Record<string, unknown>>

t.test('GET / is the health payload; other paths 404', async (t) => {
  const res = await fetch(bridge.url + '/')
  t.equal(res.status, 200)
  t.match(res.headers.get('content-type'), /^application\/json/)
  t.equal(res.headers.get('x-content-type-options'), 'nosniff')
  const body = await res.json() as Record<string, unknown>
  t.same(Object.keys(body).sort(), ['connections', 'max', 'status', 'uptime'])
  t.match(body, { status: 'ok', connections: 0, max: 8 })
  t.ok(Number.isInteger(body.uptime) && (body.uptime as number) >= 0, 'uptime in whole seconds')
  t.ok((body.uptime as number) <= (Date.now() - beforeStart) / 1000 + 1, `uptime ${body.uptime} counts seconds, not milliseconds`)
  const missing = await fetch(bridge.url + '/ws')
  t.equal(missing.status, 404)
  t.same(await missing.json(), { error: 'not found', code: 'NOT_FOUND' })
  const post = await fetch(bridge.url + '/', { method: 'POST' })
  t.equal(post.status, 405)
  t.equal(post.headers.get('allow'), 'GET, HEAD')
})

t.test('GET / asking for an upgrade the bridge does not offer (h2c: curl --http2) is the health payload, not a refused terminal', async (t) => {
  const logged = bridge.logs.length
  const answer = await rawExchange(bridge.port, 'GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA')
  t.match(answer, /^HTTP\/1\.1 200 /)
  t.match(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)), { status: 'ok', max: 8 })
  await sleep(50)
  t.same(bridge.logs.slice(logged).filter((l) => l.event === 'terminal.refused'), [], 'no refusal logged')
})

t.test('odd targets never end the bridge: `//[/` is a path (404), a target no URL can be made of 400', async (t) => {
  // nginx passes /terminal-ws/\[/ on as `/\[/`; new URL against a base read that as the bad host `[`.
  const cases: [string, number, Record<string, string>][] = [
    ['//[/', 404, { error: 'not found', code: 'NOT_FOUND' }],
    ['/\\[/', 404, { error: 'not found', code: 'NOT_FOUND' }],
    ['http://[/ws', 400, { error: 'the request target is not a valid URL', code: 'BAD_REQUEST' }],
  ]
  for (const [target, status, body] of cases) {
    const plain = await rawExchange(bridge.port, `GET ${target} HTTP/1.1\r\nHost: x`)
    t.match(plain, new RegExp(`^HTTP/1\\.1 ${status} `), `GET ${target}`)
    t.same(JSON.parse(plain.slice(plain.indexOf('\r\n\r\n') + 4)), body)
    const upgrade = await rawExchange(bridge.port, `GET ${target} HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nOrigin: ${ORIGIN}`)
    t.match(upgrade, new RegExp(`^HTTP/1\\.1 ${status} `), `upgrade at ${target}`)
    t.match(upgrade, /\r\nX-Content-Type-Options: nosniff\r\n/, `the refusal at ${target} is never sniffed`)
  }
  t.match(await health(), { status: 'ok' }, 'still serving')
})

t.test('an upgrade Node\'s parser refuses (a byte no target may hold) is a JSON 400 with nosniff, logged, and spends no ticket', async (t) => {
  const logged = bridge.logs.length
  const unspent = ticket()
  const head = `GET /ws\x01?ticket=${encodeURIComponent(unspent)} HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nOrigin: ${ORIGIN}\r\n\r\n`
  const answer = await rawBytes(bridge.port, head)
  t.match(answer, /^HTTP\/1\.1 400 Bad Request\r\n/)
  t.match(answer, /\r\ncontent-type: application\/json; charset=utf-8\r\n/)
  t.match(answer, /\r\nx-content-type-options: nosniff\r\n/)
  t.same(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)), { error: 'malformed HTTP request', code: 'BAD_REQUEST' })
  const line = await waitForLog(bridge.logs, 'http.client_error', logged)
  t.match(line, { status: 400, error: 'HPE_INVALID_URL' })
  t.same(bridge.logs.slice(logged).filter((l) => l.event === 'terminal.refused'), [], 'not an upgrade the bridge saw')
  t.equal(await upgradeStatus(bridge.port, `/ws?ticket=${encodeURIComponent(unspent)}`, ORIGIN), 101, 'the ticket was not spent: it never reached the check')
  await sleep(100)
  t.match(await health(), { status: 'ok' })
})

t.test('a request without Host and a CONNECT get the platform\'s JSON 400 with nosniff, not Node\'s bare answers; a CONNECT is logged and spends no ticket', async (t) => {
  // Found by an audit: Node answered the first with an empty 400 and closed the second without a word.
  const hostless = await rawBytes(bridge.port, 'GET / HTTP/1.1\r\n\r\n')
  t.match(hostless, /^HTTP\/1\.1 400 Bad Request\r\n/)
  t.match(hostless, /\r\ncontent-type: application\/json; charset=utf-8\r\n/)
  t.match(hostless, /\r\nx-content-type-options: nosniff\r\n/)
  t.same(JSON.parse(hostless.slice(hostless.indexOf('\r\n\r\n') + 4)), { error: 'the Host header is missing', code: 'BAD_REQUEST' })
  const old = await rawBytes(bridge.port, 'GET / HTTP/1.0\r\n\r\n')
  t.match(JSON.parse(old.slice(old.indexOf('\r\n\r\n') + 4)), { status: 'ok' }, 'HTTP/1.0 needs no Host: health as usual')
  const logged = bridge.logs.length
  const unspent = ticket()
  const connect = await rawBytes(bridge.port, `CONNECT /ws?ticket=${encodeURIComponent(unspent)} HTTP/1.1\r\nHost: x\r\nOrigin: ${ORIGIN}\r\n\r\n`)
  t.match(connect, /^HTTP\/1\.1 400 Bad Request\r\n/)
  t.match(connect, /\r\nx-content-type-options: nosniff\r\n/)
  t.same(JSON.parse(connect.slice(connect.indexOf('\r\n\r\n') + 4)), { error: 'CONNECT is not served: this is no proxy', code: 'BAD_REQUEST' })
  const line = await waitForLog(bridge.logs, 'http.client_error', logged)
  t.equal(line.status, 400)
  t.equal(line.error, 'CONNECT /ws?…', 'logged, without the ticket')
  t.notOk(JSON.stringify(bridge.logs.slice(logged)).includes(unspent.slice(0, 20)), 'no part of the ticket is in the log')
  t.equal(await upgradeStatus(bridge.port, `/ws?ticket=${encodeURIComponent(unspent)}`, ORIGIN), 101, 'the ticket was not spent')
})

t.test('an HTTP/1.0 upgrade is refused with 400 (RFC 6455 §4.1 asks for 1.1), logged, nothing spawned; its ticket is spent by that use', async (t) => {
  // Found by an audit: ws completed the handshake for an HTTP/1.0 request.
  const logged = bridge.logs.length
  const before = childrenOf(bridge.child.pid!).length
  const used = ticket()
  const upgrade = `GET /ws?ticket=${encodeURIComponent(used)} HTTP/1.0\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nOrigin: ${ORIGIN}`
  const answer = await rawExchange(bridge.port, upgrade)
  t.match(answer, /^HTTP\/1\.1 400 Bad Request\r\n/)
  t.match(answer, /\r\nX-Content-Type-Options: nosniff\r\n/)
  t.equal(answer.slice(answer.indexOf('\r\n\r\n') + 4), 'a WebSocket upgrade needs HTTP/1.1')
  const line = await waitForLog(bridge.logs, 'terminal.refused', logged)
  t.match(line, { status: 400, reason: 'a WebSocket upgrade needs HTTP/1.1', user: 'dev' })
  t.notOk(JSON.stringify(bridge.logs.slice(logged)).includes(used.slice(0, 20)), 'no part of the ticket is in the log')
  t.equal(childrenOf(bridge.child.pid!).length, before, 'no shell')
  t.match(await health(), { connections: 0 })
  t.equal(await upgradeStatus(bridge.port, `/ws?ticket=${encodeURIComponent(used)}`, ORIGIN), 401, 'spent by its first use, whatever followed')
  const forged = await rawExchange(bridge.port, upgrade.replace(encodeURIComponent(used), 'forged'))
  t.match(forged, /^HTTP\/1\.1 401 /, 'a bad ticket is still a 401 first')
})

t.test('headers that trickle in are cut with 408 once 10 s old, as the platform cuts them (it forwards /terminal-ws/ as a tunnel)', { timeout: 40_000 }, async (t) => {
  const { text: answer, seconds } = await trickle(bridge.port, 'GET /ws HTTP/1.1\r\nHost: x\r\n', 'X-Drip: 1\r\n', 35_000)
  t.match(answer, /^HTTP\/1\.1 408 /)
  t.match(answer, /\r\n\r\n\{"error":"the request was not complete in time","code":"REQUEST_TIMEOUT"\}$/)
  t.ok(seconds >= 9 && seconds < 15, `cut after ${seconds} s (Node's default would be 60)`)
})

t.test('refused upgrades: other paths 404, bad tickets 401, foreign origins 403, and nothing is spawned', async (t) => {
  const logged = bridge.logs.length
  const now = Date.now()
  const q = (value: string): string => `?ticket=${encodeURIComponent(value)}`
  const forged = mintTicket(['another-secret-that-is-long-enough-000000'], { id: 'u-1', username: 'dev' }, 'a-session', now).ticket
  const good = ticket()
  const [payload, mac] = good.split('.') as [string, string]
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString())
  const elevated = Buffer.from(JSON.stringify({ ...claims, userId: 'admin' })).toString('base64url') + '.' + mac
  const cases: [string, string, string | undefined, number][] = [
    ['root path', '/' + q(ticket()), ORIGIN, 404],
    ['other path', '/shell' + q(ticket()), ORIGIN, 404],
    ['path below /ws', '/ws/x' + q(ticket()), ORIGIN, 404],
    ['no ticket', '/ws', ORIGIN, 401],
    ['empty ticket', '/ws?ticket=', ORIGIN, 401],
    ['garbage ticket', '/ws' + q('abc.def'), ORIGIN, 401],
    ['forged ticket (other key)', '/ws' + q(forged), ORIGIN, 401],
    ['tampered claims', '/ws' + q(elevated), ORIGIN, 401],
    ['expired ticket', '/ws' + q(ticket(now - 61_000)), ORIGIN, 401],
    ['ticket from the future', '/ws' + q(ticket(now + 120_000)), ORIGIN, 401],
    ['foreign origin', '/ws' + q(ticket()), 'http://evil.example', 403],
    ['no origin', '/ws' + q(ticket()), undefined, 403],
  ]
  for (const [name, path, origin, status] of cases) t.equal(await upgradeStatus(bridge.port, path, origin), status, name)
  t.equal(await upgradeStatus(bridge.port, '/ws' + q(good), ORIGIN), 101, 'the good ticket works once')
  t.equal(await upgradeStatus(bridge.port, '/ws' + q(good), ORIGIN), 401, 'and is refused when reused')
  const spentByForeignOrigin = ticket()
  t.equal(await upgradeStatus(bridge.port, '/ws' + q(spentByForeignOrigin), 'http://evil.example'), 403)
  t.equal(await upgradeStatus(bridge.port, '/ws' + q(spentByForeignOrigin), ORIGIN), 401, 'a ticket is spent by its first use, whatever follows')
  const spentByPath = ticket()
  t.equal(await upgradeStatus(bridge.port, '/shell' + q(spentByPath), ORIGIN), 404)
  t.equal(await upgradeStatus(bridge.port, '/ws' + q(spentByPath), ORIGIN), 401, 'a wrong path spends it too')
  // A target no URL can be made of (sent raw: a client would not send it) is 400, and spends its ticket too.
  const spentByTarget = ticket()
  const broken = await rawExchange(bridge.port, `GET http://[/ws${q(spentByTarget)} HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nOrigin: ${ORIGIN}`)
  t.match(broken, /^HTTP\/1\.1 400 /)
  t.equal(await upgradeStatus(bridge.port, '/ws' + q(spentByTarget), ORIGIN), 401, 'a broken target spends it too')
  // Sent raw: a WebSocket client would resolve the dot segments itself.
  for (const target of ['/./ws', '/x/../ws']) {
    const upgrade = await rawExchange(bridge.port, `GET ${target}${q(ticket())} HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nOrigin: ${ORIGIN}`)
    t.match(upgrade, /^HTTP\/1\.1 404 /, `${target}: only /ws as written, not a path URL parsing makes /ws`)
  }
  await sleep(100)
  t.same(childrenOf(bridge.child.pid!), [], 'no shell was spawned')
  t.match(await health(), { connections: 0 })
  const refused = bridge.logs.slice(logged).filter((l) => l.event === 'terminal.refused')
  t.same(refused.map((l) => l.status), [...cases.map(([, , , status]) => status), 401, 403, 401, 404, 401, 400, 401, 404, 404], 'each refusal is logged')
  t.same(refused.at(-9), { event: 'terminal.refused', status: 401, reason: 'ticket already used', user: 'dev', origin: ORIGIN, time: refused.at(-9)!.time }, 'with the reason, the ticket\'s user once it is verified, and the origin')
  t.same(refused.at(-8), { event: 'terminal.refused', status: 403, reason: 'origin not allowed', user: 'dev', origin: 'http://evil.example', time: refused.at(-8)!.time })
  t.same(refused.at(-4), { event: 'terminal.refused', status: 400, reason: 'the request target is not a valid URL', user: 'dev', origin: ORIGIN, time: refused.at(-4)!.time }, 'a broken target: its ticket\'s user too')
  t.same(refused[0], { event: 'terminal.refused', status: 404, reason: 'not found', user: 'dev', origin: ORIGIN, time: refused[0]!.time })
  const unverified = refused.filter((l) => l.reason === 'missing, invalid or expired ticket')
  t.equal(unverified.length, 7)
  t.ok(unverified.every((l) => !('user' in l)), 'no user without a verified ticket')
  t.equal(refused.find((l) => l.reason === 'origin not allowed' && l.origin === null)?.status, 403, 'a missing origin is null')
  t.notMatch(JSON.stringify(bridge.logs), new RegExp(good.split('.')[1]!.slice(0, 20)), 'no ticket in the log')
})

t.test('handshakes ws refuses after the ticket and origin passed are logged as refusals, and spend the ticket', async (t) => {
  const cases: [string, string, string, RegExp][] = [
    ['POST', 'Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==', '405 Invalid HTTP method', /\r\nAllow: GET\r\n/],
    ['GET', 'Upgrade: h2c\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==', '400 Invalid Upgrade header', /\r\nX-Content-Type-Options: nosniff\r\n/],
    ['GET', 'Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: short', '400 Missing or invalid Sec-WebSocket-Key header', /\r\nX-Content-Type-Options: nosniff\r\n/],
    ['GET', 'Upgrade: websocket\r\nSec-WebSocket-Version: 7\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==', '400 Missing or invalid Sec-WebSocket-Version header', /\r\nSec-WebSocket-Version: 13, 8\r\n/],
  ]
  for (const [method, headers, answer, header] of cases) {
    const logged = bridge.logs.length
    const spent = ticket()
    const [status, reason] = [Number(answer.slice(0, 3)), answer.slice(4)]
    const raw = await rawExchange(bridge.port, `${method} /ws?ticket=${encodeURIComponent(spent)} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\n${headers}\r\nOrigin: ${ORIGIN}`)
    t.match(raw, new RegExp(`^HTTP/1\\.1 ${status} `), reason)
    t.match(raw, header, `${reason}: its header`)
    t.ok(raw.endsWith(`\r\n\r\n${reason}`), `${reason}: the reason is the body`)
    await sleep(50)
    // (The previous case's reuse, refused 401, may be logged after `logged` was taken.)
    const lines = bridge.logs.slice(logged).filter((l) => l.event === 'terminal.refused' && l.reason !== 'ticket already used')
    t.same(lines.map(({ time: _, ...l }) => l), [{ event: 'terminal.refused', status, reason, user: 'dev', origin: ORIGIN }], `${reason}: logged`)
    t.equal(await upgradeStatus(bridge.port, '/ws?ticket=' + encodeURIComponent(spent), ORIGIN), 401, `${reason}: the ticket is spent`)
  }
  t.same(childrenOf(bridge.child.pid!), [], 'no shell was spawned')
})

t.test('a ticket minted before the bridge started is refused: single use holds across a restart', async (t) => {
  const before = ticket()
  await sleep(5)
  const restarted = await startBridge()
  t.teardown(() => restarted.stop())
  t.equal(await upgradeStatus(restarted.port, '/ws?ticket=' + encodeURIComponent(before), ORIGIN), 401, 'unexpired, but older than the process')
  t.equal(await upgradeStatus(restarted.port, '/ws?ticket=' + encodeURIComponent(ticket()), ORIGIN), 101, 'a fresh one opens')
})

t.test('the shell runs as the unprivileged account, in its home, with the clean environment', async (t) => {
  const c = await connect(bridge.port)
  c.send({ type: 'create' })
  await c.frame('created')
  const uid = (await c.run('id -u')).trim()
  t.not(uid, '0', 'never root')
  if (process.getuid?.() === 0) t.equal((await c.run('id -un')).trim(), SHELL_USER, 'TERMINAL_USER')
  t.notMatch(await c.run('id -G'), /(^|\s)0(\s|$)/, 'no root group among the supplementary groups')
  const home = (await c.run('echo "$HOME"')).trim()
  t.equal((await c.run('pwd')).trim(), home, 'cwd is the home directory')
  const env = Object.fromEntries(
    (await c.run('env -0 | tr "\\0" "\\n" | grep -a "^[A-Za-z_][A-Za-z0-9_]*=" | cut -d= -f1 | sort | tr "\\n" " "'))
      .trim()
      .split(/\s+/)
      .map((k) => [k, true]),
  )
  for (const name of ['HOME', 'USER', 'LOGNAME', 'SHELL', 'PATH', 'TERM', 'LANG']) t.ok(env[name], `${name} is set`)
  for (const name of ['PLAYFIELD_CANARY', 'TERMINAL_TICKET_SECRET', 'TERMINAL_PORT', 'TERMINAL_USER', 'PLATFORM_ORIGINS', 'DATA_DIR', 'MANIFESTS_DIR', 'PORT', 'NODE_OPTIONS']) {
    t.notOk(env[name], `${name} does not reach the shell`)
  }
  t.notMatch(await c.run('env'), /canary-secret-value|test-ticket-secret/, 'no bridge value anywhere in the environment')
  t.equal((await c.run('echo "$TERM $LANG"')).trim(), 'xterm-256color C.UTF-8')
  c.ws.close()
})

t.test('the login shell is started with exactly the clean environment, whichever SHELL', async (t) => {
  // What the shell was given, before it set anything itself: its /proc environ.
  const given = 'tr "\\0" "\\n" < /proc/$$/environ | cut -d= -f1 | sort | tr "\\n" " "'
  for (const shell of ['/bin/bash', '/bin/sh']) {
    const own = shell === '/bin/bash' ? bridge : await startBridge({ SHELL: shell })
    const c = await connect(own.port)
    c.send({ type: 'create' })
    await c.frame('created')
    t.equal(await c.run(given), 'HOME LANG LOGNAME PATH SHELL TERM USER ', `${shell}: no PWD or SHLVL from the bridge's wrapper`)
    t.equal((await c.run('echo "$SHELL"')).trim(), shell)
    c.ws.close()
    await c.whenClosed()
    if (own !== bridge) await own.stop()
  }
})

t.test('no descriptor of the bridge is open in the shell, not even another session\'s PTY master', async (t) => {
  const other = await connect(bridge.port)
  other.send({ type: 'create' })
  await other.frame('created')
  const c = await connect(bridge.port)
  c.send({ type: 'create' })
  await c.frame('created')
  const tty = (await c.run('tty')).trim()
  t.match(tty, /^\/dev\/pts\/[0-9]+$/)
  // ls runs as a child, so the shell's own descriptors stay as they are while they are listed.
  const listing = (await c.run('ls -l /proc/$$/fd | grep -- "->"')).trim().split(/\r?\n/)
  t.ok(listing.length >= 3, 'stdin, stdout, stderr')
  for (const line of listing) {
    const [fd, target] = line.replace(/\x1b\[[0-9;]*m/g, '').split(/\s+/).slice(-3).filter((w) => w !== '->')
    // fd 255 is bash's own copy of its terminal.
    t.equal(target, tty, `fd ${fd} is the shell's own terminal`)
  }
  t.same((await c.run('ls /proc/self/fd | sort -n | tr "\\n" " "')).trim(), '0 1 2 3', 'a child sees 0-2 and its own directory handle')
  other.ws.close()
  c.ws.close()
})

t.test('a shell that sends its bridge SIGUSR1 opens no debugger in it', async (t) => {
  const c = await connect(bridge.port)
  c.send({ type: 'create' })
  await c.frame('created')
  await c.run('kill -USR1 $PPID')
  await sleep(500)
  // Node's inspector would listen on 127.0.0.1:9229 and run any code sent to it inside the bridge.
  t.notMatch(bridge.stderr(), /Debugger listening/, 'Node did not start its inspector')
  t.match(await c.run('echo still-here'), /still-here/, 'the shell goes on')
  t.match(await health(), { status: 'ok' }, 'the bridge still serves')
  c.ws.close()
})

t.test('a root bridge becomes TERMINAL_USER before it accepts a connection, and its shells cannot look into it', { skip: process.getuid?.() !== 0 && 'needs root' }, async (t) => {
  const shellUid = String(uidOf(SHELL_USER))
  const status = readFileSync(`/proc/${bridge.child.pid}/status`, 'utf8')
  t.match(status, new RegExp(`\\nUid:\\t${shellUid}\\t${shellUid}\\t${shellUid}\\t${shellUid}\\n`), 'real, effective, saved and file uid are the account\'s')
  t.match(status, /\nCapEff:\t0+\n/, 'no capability left')
  t.notMatch(status.split('\nGroups:')[1]!.split('\n')[0]!, /(^|\s)0(\s|$)/, 'no root group')
  const c = await connect(bridge.port)
  c.send({ type: 'create' })
  await c.frame('created')
  t.equal((await c.run('echo $PPID')).trim(), String(bridge.child.pid), 'the shell\'s parent is the bridge')
  // Same account, yet the kernel keeps a process that changed its user out of reach (not dumpable).
  t.match(await c.run('tr "\\0" "\\n" < /proc/$PPID/environ'), /Permission denied/, 'its environment (the ticket secret)')
  t.match(await c.run('ls /proc/$PPID/fd'), /Permission denied/, 'its descriptors')
  t.match(await c.run('head -c 1 /proc/$PPID/mem'), /Permission denied/, 'its memory')
  t.match(await c.run('tr "\\0" "\\n" < /proc/$$/environ | grep -c "^HOME="'), /^1/, 'while its own processes stay open to it')
  c.ws.close()
})

t.test('configuration errors: a root bridge without TERMINAL_USER, with root, or unable to switch, exits 2', { skip: process.getuid?.() !== 0 && 'needs root' }, async (t) => {
  ensureShellUser()
  const base = { TERMINAL_PORT: '0', TERMINAL_TICKET_SECRET: TICKET_SECRET }
  const shellDir = tempDir()
  chmodSync(shellDir, 0o755) // the account may look in, so only the file's own mode stops it
  const rootOnlyShell = path.join(shellDir, 'bash-0700')
  copyFileSync('/bin/bash', rootOnlyShell)
  chmodSync(rootOnlyShell, 0o700)
  for (const [env, pattern] of [
    [{ TERMINAL_USER: undefined }, /^config: TERMINAL_USER: must name an unprivileged account/],
    [{ TERMINAL_USER: 'root' }, /^config: TERMINAL_USER: must name an unprivileged account/],
    [{ TERMINAL_USER: 'no-such-user-here' }, /^config: TERMINAL_USER: "no-such-user-here" is not an account/],
    [{ TERMINAL_USER: SHELL_USER, TERMINAL_HOST: '0.0.0.0' }, /^config: TERMINAL_HOST: "0.0.0.0" is not a loopback address/],
    // Root may run it; the account the bridge becomes may not.
    [{ TERMINAL_USER: SHELL_USER, SHELL: rootOnlyShell }, new RegExp(`^config: SHELL: "${rootOnlyShell}" is not executable by "${SHELL_USER}"; expected an absolute path to a shell`)],
  ] as const) {
    const failed = await startPlatform({ script: BRIDGE_JS, readyEvent: 'bridge.listening', env: { ...base, ...env } }).then(
      () => null,
      (err: Error) => err,
    )
    t.ok(failed, 'did not start')
    t.match(failed?.message, /process exited \(2\)/, 'exit code 2')
    t.match(failed?.message.split('before ready: ')[1], pattern)
    t.equal(failed?.message.split('before ready: ')[1]?.trim().split('\n').length, 1, 'one line, no stack')
  }
  // Root without CAP_SETUID and CAP_SETGID (a unit whose bounding set lacks them) cannot switch.
  const capless = await startPlatform({
    command: ['setpriv', '--bounding-set=-all', '--inh-caps=-all', '--', process.execPath, BRIDGE_JS],
    readyEvent: 'bridge.listening',
    env: { ...base, TERMINAL_USER: SHELL_USER },
  }).then(
    () => null,
    (err: Error) => err,
  )
  t.match(capless?.message, /process exited \(2\)/, 'exit code 2')
  t.equal(capless?.message.split('before ready: ')[1]?.trim(), `config: TERMINAL_USER: the bridge could not switch to "${SHELL_USER}" (EPERM); a root bridge needs CAP_SETUID and CAP_SETGID`)
  // An account in the root group, though its own gid is not 0: the shells would hold group 0.
  const rootGroupUser = 'playfield-rootgrp'
  try {
    execFileSync('userdel', ['--remove', rootGroupUser], { stdio: 'ignore' }) // left by a run that was cut short
  } catch {
    // none
  }
  execFileSync('useradd', ['--create-home', '--shell', '/bin/bash', '--groups', 'root', rootGroupUser], { stdio: 'ignore' })
  t.teardown(() => execFileSync('userdel', ['--remove', rootGroupUser], { stdio: 'ignore' }))
  const inRootGroup = await startPlatform({ script: BRIDGE_JS, readyEvent: 'bridge.listening', env: { ...base, TERMINAL_USER: rootGroupUser } }).then(
    (started) => started.stop().then(() => null), // stopped, or the account could not be removed
    (err: Error) => err,
  )
  t.match(inRootGroup?.message, /process exited \(2\)/, 'exit code 2')
  t.equal(inRootGroup?.message.split('before ready: ')[1]?.trim(), `config: TERMINAL_USER: "${rootGroupUser}" is a member of group 0 (root); expected an unprivileged account`)
  // An account whose home it cannot enter: the shells' working directory. An account .ci/run made
  // (home /home/playfield-shell) under the terminal unit's ProtectHome=yes is one; every shell
  // then exited at once with "chdir(2) failed.: Permission denied" while the bridge ran on.
  const homelessUser = 'playfield-homeless'
  const lockedHome = path.join(tempDir(), 'home') // tempDir is 0700 root: the account cannot enter it
  try {
    execFileSync('userdel', [homelessUser], { stdio: 'ignore' }) // left by a run that was cut short
  } catch {
    // none
  }
  execFileSync('useradd', ['--no-create-home', '--home-dir', lockedHome, '--shell', '/bin/bash', homelessUser], { stdio: 'ignore' })
  mkdirSync(lockedHome)
  t.teardown(() => execFileSync('userdel', [homelessUser], { stdio: 'ignore' }))
  const homeless = await startPlatform({ script: BRIDGE_JS, readyEvent: 'bridge.listening', env: { ...base, TERMINAL_USER: homelessUser } }).then(
    (started) => started.stop().then(() => null),
    (err: Error) => err,
  )
  t.match(homeless?.message, /process exited \(2\)/, 'exit code 2')
  t.equal(homeless?.message.split('before ready: ')[1]?.trim(), `config: TERMINAL_USER: the home directory ${JSON.stringify(lockedHome)} of "${homelessUser}" cannot be entered by it (EACCES); expected a directory the account owns, such as /var/lib/${homelessUser}`)
  // Started as a uid with no passwd entry (a container's --user 12345): one line, not a stack trace.
  const nameless = await startPlatform({
    // env -u: the test runner's NODE_OPTIONS preload writes to its own root-owned files at exit.
    command: ['env', '-u', 'NODE_OPTIONS', 'setpriv', '--reuid=12345', '--regid=12345', '--clear-groups', '--', process.execPath, BRIDGE_JS],
    readyEvent: 'bridge.listening',
    env: base,
  }).then(
    () => null,
    (err: Error) => err,
  )
  t.match(nameless?.message, /process exited \(2\)/, 'exit code 2')
  t.equal(nameless?.message.split('before ready: ')[1]?.trim(), 'config: TERMINAL_USER: the bridge runs as uid 12345, which has no account in /etc/passwd; expected to run as an account with a home directory, or as root with TERMINAL_USER')
  // Not root: its shells run as itself, and a TERMINAL_USER naming someone else is said to be ignored.
  const shellUid = String(uidOf(SHELL_USER))
  const unswitched = await startPlatform({
    command: ['env', '-u', 'NODE_OPTIONS', 'setpriv', `--reuid=${shellUid}`, `--regid=${shellUid}`, '--clear-groups', '--', process.execPath, BRIDGE_JS],
    readyEvent: 'bridge.listening',
    env: { ...base, TERMINAL_USER: 'nobody' },
  })
  t.match(unswitched.logs.find((l) => l.event === 'bridge.terminal_user_ignored'), { terminalUser: 'nobody', shellUser: SHELL_USER })
  await unswitched.stop()
})
