import t, { type Test } from 'tap'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { ROOT } from './helpers/platform.js'
import { request, type Answer } from './helpers/nginx.js'
import { WebSocket } from 'ws'
import { TermClient, connect, until } from './helpers/terminal.js'
import { bootContainer, containerUnavailable, type Container } from './helpers/container.js'

// Deploy, as the README writes it, on a machine whose PID 1 is systemd: this machine's own system
// booted in a container (test/helpers/container.ts), the checkout at /opt/playfield. systemd.test
// and socket-activation imitate what the units do; here systemd itself applies them: the sandbox,
// the accounts, socket activation, Restart=, ExecReload=, the stop. The README's blocks for steps
// 2, 4 and 5 and its `users` command run as written; step 3's clone and npm ci are the mount.
const unavailable = containerUnavailable()
const README = readFileSync(path.join(ROOT, 'README.md'), 'utf8')
const SITE_ORIGIN = 'https://play.example.com' // Deploy step 4's PLATFORM_ORIGINS
const SHELL_HOME = '/var/lib/playfield-shell'

/** The first ```sh block of the README after `marker` (a step's bold heading, say), without the indentation of a list item's block. */
function readmeBlock(readme: string, marker: string): string {
  const at = readme.indexOf(marker)
  if (at < 0) throw new Error(`README: no ${JSON.stringify(marker)}`)
  const fence = /^( *)```sh\n([^]*?)\n\1```$/m.exec(readme.slice(at))
  if (!fence) throw new Error(`README: no sh block after ${JSON.stringify(marker)}`)
  const indent = fence[1]!
  return fence[2]!.split('\n').map((line) => line.startsWith(indent) ? line.slice(indent.length) : line).join('\n')
}

let box: Container
let api = ''
let bridgePort = 0

t.before(async () => {
  if (unavailable) return
  box = await bootContainer(ROOT)
})
t.teardown(() => box?.stop())

/** Run a script in the container; its stdout, or a failed assertion with everything it printed. */
function inside(t: Test, script: string, what = script.split('\n')[0]!): string {
  const run = box.sh(script)
  t.equal(run.status, 0, `${what}: exit 0`, { stdout: run.stdout.slice(-2000), stderr: run.stderr.slice(-2000) })
  return run.stdout
}
const show = (unit: string, property: string): string => box.sh(`systemctl show -p ${property} --value ${unit}`).stdout.trim()
const journal = (unit: string): Array<Record<string, unknown>> => box.sh(`journalctl -u ${unit} -o cat --no-pager`).stdout
  .split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as Record<string, unknown>)

/**
 * A signed-in account's requests, each on a connection of its own: through the two relays of a
 * forwarded port, a server's close of an idle keep-alive connection reaches a client late, and
 * fetch sent requests on connections the platform had already closed ("other side closed").
 */
class Account {
  constructor(readonly cookie: string) {}
  get(path: string): Promise<Answer> {
    return request('GET', api + path, { headers: { origin: SITE_ORIGIN, cookie: this.cookie } })
  }
  post(path: string): Promise<Answer> {
    return request('POST', api + path, { headers: { origin: SITE_ORIGIN, cookie: this.cookie } })
  }
}

async function signedIn(name: string): Promise<Account> {
  const res = await request('POST', `${api}/api/auth/register`, { headers: { origin: SITE_ORIGIN }, body: { username: name, password: 'correct horse battery' } })
  if (res.status !== 200) throw new Error(`register ${name}: ${res.status} ${res.body}`)
  return new Account(res.headers['set-cookie']![0]!.split(';')[0]!)
}

/** The README's `users` command for a deployed server, with `verb` and `name` in place of its example's (the role stays developer). */
function users(t: Test, verb: string, name: string): string {
  const block = readmeBlock(README, 'On a server installed as in [Deploy](#deploy), run it as the service account')
  t.match(block, / users grant alice developer\)$/, 'the README\'s command grants alice')
  return inside(t, block.replace(/ users grant alice developer\)$/, ` users ${verb} ${name} developer)`), `users ${verb} ${name}`)
}

async function terminal(client: Account): Promise<{ term: TermClient; pid: number }> {
  const res = await client.post('/dev/terminal/ticket')
  const body = JSON.parse(res.body) as { ticket?: string }
  if (res.status !== 200 || !body.ticket) throw new Error(`ticket: ${res.status} ${JSON.stringify(body)}`)
  const term = await connect(bridgePort, { ticket: body.ticket, origin: SITE_ORIGIN })
  term.send({ type: 'create', cols: 100, rows: 30 })
  return { term, pid: (await term.frame('created')).pid as number }
}

t.test('Deploy steps 2 to 5, as written, leave both services running under systemd', { skip: unavailable ?? false }, async (t) => {
  // A fresh server has neither account (this machine may have playfield-shell, for the other tests).
  box.sh('userdel playfield-shell; userdel playfield; rm -rf /var/lib/playfield-shell; true')
  inside(t, `set -e\n${readmeBlock(README, '**2. Accounts.**')}`, 'step 2')
  const step3 = readmeBlock(README, '**3. Code and directories.**').split('\n').filter((line) => line.startsWith('install '))
  t.same(step3, ['install -d -m 0750 /etc/playfield'], 'step 3 makes /etc/playfield')
  inside(t, step3.join('\n'), 'step 3')
  inside(t, `set -e\n${readmeBlock(README, '**4. Environment files.**')}`, 'step 4')
  const step5 = inside(t, `set -e\n${readmeBlock(README, '**5. Units.**')}`, 'step 5')
  t.match(step5, /\{"success":true,"games":\[/, 'the catalogue answers on 127.0.0.1:3000')
  t.match(step5, /\{"status":"ok","connections":0,"max":4,"uptime":\d+\}/, 'the bridge\'s health on 127.0.0.1:7681, TERMINAL_MAX_CONN from terminal.env')
  // The ratings the README gives, now from the running units.
  t.match(step5, /\nplayfield\.service\s+0\.9 /, 'systemd-analyze security rates the platform 0.9')
  t.match(step5, /\nplayfield-terminal\.service\s+2\.5 /, 'and the terminal 2.5')
  for (const unit of ['playfield.socket', 'playfield-terminal.socket', 'playfield.service', 'playfield-terminal.service']) {
    t.equal(show(unit, 'ActiveState'), 'active', `${unit} is active`)
  }
  t.match(journal('playfield'), [{ event: 'platform.listening', socket: 'systemd', backend: 'embedded' }])
  t.match(journal('playfield-terminal'), [{ event: 'bridge.listening', socket: 'systemd', shellUser: 'playfield-shell' }])
  api = `http://127.0.0.1:${await box.forward(3000)}`
  bridgePort = await box.forward(7681)
})

t.test('the platform runs sandboxed as playfield, its data private in the state directory', { skip: unavailable ?? false }, async (t) => {
  const pid = show('playfield', 'MainPID')
  const status = inside(t, `cat /proc/${pid}/status`)
  const uid = inside(t, 'id -u playfield').trim()
  t.match(status, new RegExp(`\\nUid:\\s+${uid}\\s+${uid}\\s+${uid}\\s`), 'runs as the playfield account')
  t.match(status, /\nCapPrm:\s+0+\nCapEff:\s+0+\n/, 'with no capability')
  t.match(status, /\nNoNewPrivs:\s+1\n/, 'no new privileges')
  t.match(status, /\nSeccomp:\s+2\n/, 'a system call filter')
  const client = await signedIn('erin')
  t.equal((await client.get('/api/auth/session')).status, 200, 'an account is made and signed in: the database is writable')
  t.equal(inside(t, 'stat -c "%U %a" /var/lib/playfield').trim(), 'playfield 700', 'DATA_DIR is the account\'s, 0700')
  t.match(inside(t, 'ls /var/lib/playfield'), /playfield\.sqlite/, 'the database lives there')
  t.equal(inside(t, 'find /var/lib/playfield -perm /077 | wc -l').trim(), '0', 'nothing in it is open to other accounts')
  // ProtectSystem=strict: the checkout is read-only to the service, whatever its modes.
  t.equal(inside(t, `nsenter -t ${pid} -m -- sh -c 'touch /opt/playfield/x 2>&1 || true'`).includes('Read-only file system'), true, '/opt/playfield is read-only to it')
})

t.test('a developer\'s terminal: the shell account, its home, a clean environment, no way to the bridge\'s secret', { skip: unavailable ?? false }, async (t) => {
  const client = await signedIn('dana')
  t.equal((await client.post('/dev/terminal/ticket')).status, 403, 'no ticket before the grant')
  t.match(users(t, 'grant', 'dana'), /granted developer to dana/)
  const { term, pid } = await terminal(client)
  t.teardown(() => term.ws.terminate())
  t.equal((await term.run('id -un')).trim(), 'playfield-shell', 'the shell runs as the shell account')
  t.equal((await term.run('pwd')).trim(), SHELL_HOME, 'in its home')
  t.equal((await term.run('stty size')).trim(), '30 100', 'at the size of create')
  t.equal((await term.run('touch ~/.written && echo ok')).trim(), 'ok', 'the home is writable')
  t.match(await term.run('touch /opt/playfield/x'), /Read-only file system/, 'the checkout is not')
  t.match(await term.run('ls -A /home'), /^(ls: cannot open directory '\/home': Permission denied\r?\n)?$/, 'no home in /home is seen (ProtectHome=yes)')
  const names = (await term.run('env | cut -d= -f1 | sort | tr "\\n" " "')).trim().split(' ')
  t.same(names.filter((name) => !['HOME', 'LANG', 'LOGNAME', 'OLDPWD', 'PATH', 'PWD', 'SHELL', 'SHLVL', 'TERM', 'USER', '_'].includes(name)), [], 'the environment holds only the clean set')
  t.equal((await term.run('ls /proc/self/fd | tr "\\n" " "')).trim(), '0 1 2 3', 'no descriptor of the bridge (3 is ls\'s own directory)')
  // The bridge became this account after reading its settings: not dumpable, so its environment
  // (the ticket secret) is out of the shell's reach though the uid is the same. Under the unit
  // (ProtectProc=invisible) the shell does not even see it in /proc.
  const bridge = show('playfield-terminal', 'MainPID')
  t.equal((await term.run('echo $PPID')).trim(), bridge, 'the shell\'s parent is the bridge')
  t.equal(await term.run('cat /proc/$PPID/environ'), `cat: /proc/${bridge}/environ: No such file or directory\r\n`, 'whose environment the shell cannot read')
  t.equal(inside(t, `ps -o user= -p ${bridge}`).trim(), 'playfield-shell', 'the bridge runs as the shell account')
  t.match(await term.run('cat /proc/self/cgroup'), new RegExp(`0::/system\\.slice/playfield-terminal\\.service/playfield-terminal\\.${bridge}/t\\d+\\r?\\n`), 'but in a cgroup of its terminal, in the unit\'s delegated tree')

  // Delegate=yes: systemd marks the unit's cgroup as handed over (trusted.delegate) and leaves the
  // tree under it to the bridge; without it that tree is systemd's own to manage
  // (systemd.resource-control(5), Delegate=), though nothing here would show it yet.
  const unitCgroup = '"$(findmnt -n -t cgroup2 -o TARGET | head -n 1)/system.slice/playfield-terminal.service"'
  t.equal(inside(t, `python3 -c 'import os, sys; print(os.getxattr(sys.argv[1], "trusted.delegate").decode())' ${unitCgroup}`).trim(), '1', 'a tree systemd delegated to the bridge')

  // Closing the socket ends the shell's jobs, the ones that left its session and ignore SIGHUP too.
  // The shell waits until both have started (it sees its own account's processes).
  await term.run(`nohup sleep 1041 >/dev/null 2>&1 & setsid -f sh -c 'trap "" HUP; exec sleep 1042' </dev/null >/dev/null 2>&1; until [ "$(pgrep -c -x -f 'sleep 104[12]')" = 2 ]; do sleep 0.05; done`)
  t.equal(inside(t, 'pgrep -c -x -f "sleep 104[12]"').trim(), '2', 'two jobs running')
  term.ws.close()
  await until(() => box.sh('pgrep -x -f "sleep 104[12]"').status === 1, 10_000, 'the jobs to end')
  t.equal(box.sh(`kill -0 ${pid}`).status, 1, 'the shell is gone')
  t.match(journal('playfield-terminal').filter((l) => l.event === 'terminal.session'), [{ user: 'dana', pid }], 'the connection\'s log line names the user')
})

t.test('users revoke closes the developer\'s open terminal at once', { skip: unavailable ?? false }, async (t) => {
  const client = await signedIn('frank')
  users(t, 'grant', 'frank')
  const { term } = await terminal(client)
  t.teardown(() => term.ws.terminate())
  t.match(users(t, 'revoke', 'frank'), /revoked developer from frank/)
  t.equal((await term.whenClosed(10_000)).code, 1008, 'closed as a policy violation')
  t.equal((await client.post('/dev/terminal/ticket')).status, 403, 'and no new ticket')
})

t.test('the README\'s nftables rule keeps shells off 127.0.0.2, the address the platform trusts, and nothing else', { skip: unavailable ?? false }, async (t) => {
  const rule = readmeBlock(README, 'forbid the shell account to open')
  t.match(rule, /^nft add table inet playfield\n/)
  inside(t, `set -e\n${rule}`, 'the nft commands')
  t.teardown(() => box.sh('nft delete table inet playfield'))
  const client = await signedIn('ivan')
  users(t, 'grant', 'ivan')
  const { term } = await terminal(client)
  t.teardown(() => term.ws.terminate())
  const get = (from: string, url = 'http://127.0.0.1:3000/api/games'): string => `curl -s -o /dev/null -w '%{http_code}' --max-time 5 --interface ${from} ${url}; echo " exit $?"`
  t.equal((await term.run(get('127.0.0.2'))).trim(), '000 exit 7', 'the shell account\'s connection from 127.0.0.2 is refused')
  t.equal((await term.run(get('127.0.0.1'))).trim(), '200 exit 0', 'its connection from 127.0.0.1 is answered')
  t.equal(inside(t, get('127.0.0.2')).trim(), '200 exit 0', 'root\'s from 127.0.0.2 is answered')
  // A server of the shell account's at 127.0.0.2: its replies are not new connections. The shell
  // waits until the server has bound its port (http.server says "Serving HTTP" once it has) or
  // has exited; a fixed second was not always enough on a loaded machine.
  await term.run('python3 -u -m http.server 8123 --bind 127.0.0.2 >http.log 2>&1 & until grep -q "^Serving HTTP" http.log || ! kill -0 $! 2>/dev/null; do sleep 0.1; done')
  t.equal(inside(t, get('127.0.0.1', 'http://127.0.0.2:8123/')).trim(), '200 exit 0', 'root reaches a server of the shell account\'s there')
})

t.test('systemctl stop of the bridge: 1001 to clients, shells ended, the socket keeps the port and starts it again', { skip: unavailable ?? false }, async (t) => {
  const client = await signedIn('gwen')
  users(t, 'grant', 'gwen')
  const { term, pid } = await terminal(client)
  t.teardown(() => term.ws.terminate())
  const first = show('playfield-terminal', 'MainPID')
  const began = Date.now()
  inside(t, 'systemctl stop playfield-terminal.service')
  t.ok(Date.now() - began < 10_000, 'stopped within TimeoutStopSec')
  t.equal((await term.whenClosed(5_000)).code, 1001, 'the client is told the bridge is going away')
  t.equal(show('playfield-terminal', 'Result'), 'success', 'the stop succeeded, nothing left for systemd to kill')
  t.equal(show('playfield-terminal', 'ExecMainStatus'), '0', 'the bridge exited 0')
  t.equal(box.sh(`kill -0 ${pid}`).status, 1, 'the shell is gone')
  t.equal(box.sh('pgrep -u playfield-shell').status, 1, 'no process of the shell account is left')
  t.equal(show('playfield-terminal.socket', 'ActiveState'), 'active', 'the socket still listens')
  const health = await request('GET', `http://127.0.0.1:${bridgePort}/`)
  t.equal(health.status, 200, 'a connection to the socket starts the bridge again')
  t.match(JSON.parse(health.body.toString()), { status: 'ok', connections: 0, max: 4 })
  t.not(show('playfield-terminal', 'MainPID'), first, 'a new bridge')
})

t.test('the platform: ExecReload reloads the catalogue, a crash is restarted with no request lost, the stop is clean', { skip: unavailable ?? false }, async (t) => {
  inside(t, 'systemctl reload playfield')
  await until(() => journal('playfield').some((l) => l.event === 'catalogue.reloaded'), 10_000, 'the reload line')
  t.pass('systemctl reload reloads the catalogue')
  const first = show('playfield', 'MainPID')
  inside(t, `kill -9 ${first}`)
  // Sent while no platform runs: it waits in the socket's queue for the next one (RestartSec=2s).
  const during = await request('GET', `${api}/api/games`)
  t.equal(during.status, 200, 'a request sent during the restart is answered')
  t.not(show('playfield', 'MainPID'), first, 'by a new platform')
  t.equal(show('playfield', 'NRestarts'), '1', 'restarted once by Restart=always')
  const client = await signedIn('hana')
  t.equal((await client.get('/api/auth/session')).status, 200, 'accounts survive the crash')
  inside(t, 'systemctl stop playfield.socket playfield.service')
  t.equal(show('playfield', 'Result'), 'success', 'the stop succeeded')
  t.equal(show('playfield', 'ExecMainStatus'), '0', 'the platform exited 0')
  t.equal(journal('playfield').filter((l) => l.event === 'platform.stopping').length, 1, 'with its stopping line')
})

t.test('Deploy step 6 with a certificate of one\'s own: nginx in front, over https, the terminal through /terminal-ws/', { skip: unavailable ?? false }, async (t) => {
  const live = '/etc/letsencrypt/live/play.example.com'
  inside(t, `set -e; mkdir -p ${live}; cd ${live}
    openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=play.example.com -addext subjectAltName=DNS:play.example.com -days 2 -keyout privkey.pem -out fullchain.pem 2>/dev/null
    chmod 0600 privkey.pem
    systemctl is-active --quiet nginx || systemctl start nginx  # step 1's apt-get starts it`, 'a certificate at the site\'s paths')
  const ca = Buffer.from(inside(t, `cat ${live}/fullchain.pem`))
  // The step as written, but for certbot, which needs the Internet.
  const lines = readmeBlock(README, '**6. nginx and certificates.**').replaceAll('\\\n', ' ').split('\n')
  t.equal(lines.filter((line) => line.startsWith('certbot ')).length, 2, 'the step\'s two certbot commands are left out')
  inside(t, `set -e\n${lines.filter((line) => !line.startsWith('certbot ')).join('\n')}`, 'step 6')
  t.equal(inside(t, 'stat -c "%U:%G %a" /var/log/nginx/playfield.access.log /var/log/nginx/playfield.error.log'), 'www-data:adm 640\nwww-data:adm 640\n', 'the site\'s logs are not open to other accounts')

  // Through nginx from 127.0.0.9: the platform believes nginx (it connects from 127.0.0.2, TRUST_PROXY) about the client.
  const https = `https://127.0.0.1:${await box.forward(443, '127.0.0.9')}`
  const site = { ca, servername: 'play.example.com' }
  const headers = { host: 'play.example.com', origin: SITE_ORIGIN }
  const redirect = await request('GET', `http://127.0.0.1:${await box.forward(80)}/api/games`, { headers: { host: 'play.example.com' } })
  t.equal(redirect.status, 301, 'http is redirected')
  t.equal(redirect.headers.location, 'https://play.example.com/api/games', 'to https')

  // The platform is stopped (the test before): nginx answers for it, in JSON.
  const down = await request('GET', `${https}/api/games`, { ...site, headers })
  t.equal(down.status, 503, 'nginx answers while the platform is down')
  t.same(JSON.parse(down.body), { error: 'the platform is not answering; try again shortly', code: 'BACKEND_UNAVAILABLE' }, 'the contract\'s error body')
  t.match(down.headers['content-type'], /^application\/json/)
  t.equal(down.headers['retry-after'], '5')
  inside(t, 'systemctl start playfield.socket')

  const games = await request('GET', `${https}/api/games`, { ...site, headers })
  t.equal(games.status, 200, 'the catalogue through nginx once the socket is back')
  t.match(JSON.parse(games.body), { success: true, games: [] })
  const id = games.headers['x-request-id']
  t.match(journal('playfield').find((l) => l.event === 'http.request' && l.id === id), { path: '/api/games', status: 200, ip: '127.0.0.9' }, 'the access log names the client nginx saw')

  const register = await request('POST', `${https}/api/auth/register`, { ...site, headers, body: { username: 'jill', password: 'correct horse battery' } })
  t.equal(register.status, 200)
  const setCookie = register.headers['set-cookie']![0]!
  t.match(setCookie, /; HttpOnly/, 'the cookie is HttpOnly')
  t.match(setCookie, /; Secure/, 'and Secure, the origin being https')
  users(t, 'grant', 'jill')
  const cookie = setCookie.split(';')[0]!
  const minted = await request('POST', `${https}/dev/terminal/ticket`, { ...site, headers: { ...headers, cookie } })
  t.equal(minted.status, 200, 'a ticket through nginx')
  const { ticket } = JSON.parse(minted.body) as { ticket: string }
  const ws = new WebSocket(`wss://127.0.0.1:${https.split(':')[2]}/terminal-ws/ws?ticket=${encodeURIComponent(ticket)}`, { ...site, origin: SITE_ORIGIN, headers: { host: 'play.example.com' } })
  const term = new TermClient(ws)
  t.teardown(() => ws.terminate())
  await term.opened
  term.send({ type: 'create' })
  await term.frame('created')
  t.equal((await term.run('id -un')).trim(), 'playfield-shell', 'a shell through nginx')
  t.equal((await term.run('stty size')).trim(), '24 80', 'of the default size')
  // nginx logs an upgraded request when its connection ends.
  ws.close()
  await term.whenClosed()
  const upgraded = /"GET \/terminal-ws\/ws HTTP\/1\.1" 101 /
  await until(() => upgraded.test(box.sh('cat /var/log/nginx/playfield.access.log').stdout), 5_000, 'the upgrade in the access log')
  const accessLog = inside(t, 'cat /var/log/nginx/playfield.access.log')
  t.match(accessLog, upgraded, 'nginx logged the upgrade')
  t.notOk(accessLog.includes(ticket.slice(0, 40)), 'without its ticket')
})
