import t from 'tap'
import { execFile, spawnSync } from 'node:child_process'
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, readdirSync, symlinkSync, writeFileSync, writeSync } from 'node:fs'
import os from 'node:os'
import net from 'node:net'
import path from 'node:path'
import Database from 'better-sqlite3'
import { loadBridgeConfig, loadPlatformConfig } from '../lib/config.js'
import { ConfigError } from '../lib/config-error.js'
import { BRIDGE_JS, ROOT, startPlatform, startRefused, tempDir } from './helpers/platform.js'
import { ensureShellUser, gidOf, SHELL_USER, startBridge, uidOf } from './helpers/terminal.js'

// GAME_BACKEND=nakama with one of its keys unset: each is required (CONTRACT §1).
const NAKAMA = { GAME_BACKEND: 'nakama', NAKAMA_URL: 'http://127.0.0.1:7350', NAKAMA_SERVER_KEY: 'serverkey', NAKAMA_HTTP_KEY: 'httpkey' }
const MISSING_KEYS = (['NAKAMA_SERVER_KEY', 'NAKAMA_HTTP_KEY'] as const).map((name): [Record<string, string>, string] => {
  const { [name]: _unset, ...env } = NAKAMA
  return [env, `${name}: missing; required when GAME_BACKEND=nakama (a non-empty string without spaces or colons (Basic auth ends the key at the first colon))`]
})

/** Each bad variable and the exact line the platform prints (CONTRACT §1). */
const BAD: [Record<string, string>, string][] = [
  [{ PORT: 'abc' }, 'PORT: "abc" is invalid; expected an integer from 0 to 65535'],
  [{ PORT: '99999' }, 'PORT: "99999" is invalid; expected an integer from 0 to 65535'],
  [{ HOST: 'bad host' }, 'HOST: "bad host" is invalid; expected an IP address or host name'],
  [{ GAME_BACKEND: 'mongo' }, 'GAME_BACKEND: "mongo" is invalid; expected "embedded" or "nakama"'],
  [{ PLATFORM_ORIGINS: 'play.example.com' }, 'PLATFORM_ORIGINS: "play.example.com" is invalid; expected a comma list of origins like https://play.example.com'],
  // Origins are compared as browsers write them: another spelling of the same origin never matches.
  [{ PLATFORM_ORIGINS: 'https://play.example.com,https://Play.Example.com:443' },
    'PLATFORM_ORIGINS: "https://Play.Example.com:443" is not an origin as browsers send it; write it as https://play.example.com; expected a comma list of origins like https://play.example.com'],
  [{ PLATFORM_ORIGINS: 'http://x.example.com/' },
    'PLATFORM_ORIGINS: "http://x.example.com/" is not an origin as browsers send it; write it as http://x.example.com; expected a comma list of origins like https://play.example.com'],
  [{ PLATFORM_ORIGINS: 'https://play.example.com?x' },
    'PLATFORM_ORIGINS: "https://play.example.com?x" is not an origin as browsers send it; write it as https://play.example.com; expected a comma list of origins like https://play.example.com'],
  [{ GAME_BACKEND: 'nakama' }, 'NAKAMA_URL: missing; required when GAME_BACKEND=nakama (an http(s) URL)'],
  ...MISSING_KEYS,
  [{ SESSION_SECRET: 's'.repeat(31) }, 'SESSION_SECRET: (31 characters, not shown) is invalid; expected a comma list of secrets, each at least 32 characters without spaces'],
  [{ SESSION_SECRET: `${'a'.repeat(32)},${'b'.repeat(31)}` }, 'SESSION_SECRET: (64 characters, not shown) is invalid; expected a comma list of secrets, each at least 32 characters without spaces'],
  [{ TERMINAL_TICKET_SECRET: 't'.repeat(31) }, 'TERMINAL_TICKET_SECRET: (31 characters, not shown) is invalid; expected a comma list of secrets, each at least 32 characters without spaces'],
  [{ SESSION_SECRET: 'too-short' }, 'SESSION_SECRET: (9 characters, not shown) is invalid; expected a comma list of secrets, each at least 32 characters without spaces'],
  [{ SESSION_SECRET: `${'a'.repeat(40)}, ${'b'.repeat(40)}` }, 'SESSION_SECRET: (82 characters, not shown) is invalid; expected a comma list of secrets, each at least 32 characters without spaces'],
  [{ DEV_ACCESS_ALL: 'yes' }, 'DEV_ACCESS_ALL: "yes" is invalid; expected "true" or "false"'],
  [{ DEV_ACCESS_USERS: 'alice,bob smith' }, 'DEV_ACCESS_USERS: "alice,bob smith" is invalid; expected a comma list of user ids (lower-case UUIDs) or usernames (3-24 of A-Z a-z 0-9 _ -), spaces only around the commas'],
  // Entries no account could have: another separator, a character no username takes.
  // An upper-case id: the gate compares ids exactly, and both backends write them in lower case.
  ...['alice;bob', 'alice|bob', 'alice,b@b', 'al', '0f4618f9-2e9b-46ca-99f0-64c05cc7301', '0F4618F9-2E9B-46CA-99F0-64C05CC7301D'].map((value): [Record<string, string>, string] => [
    { DEV_ACCESS_USERS: value },
    `DEV_ACCESS_USERS: ${JSON.stringify(value)} is invalid; expected a comma list of user ids (lower-case UUIDs) or usernames (3-24 of A-Z a-z 0-9 _ -), spaces only around the commas`,
  ]),
  [{ TRUST_PROXY: '10.0.0.1 10.0.0.2' }, 'TRUST_PROXY: "10.0.0.1 10.0.0.2" is invalid; expected a comma list of IP addresses or CIDR ranges'],
  [{ TRUST_PROXY: '10.0.0.0/99' }, 'TRUST_PROXY: "10.0.0.0/99" is invalid; expected a comma list of IP addresses or CIDR ranges'],
  // A prefix is digits: `10.0.0.1/` read as /0 would trust every IPv4 client's X-Forwarded-For.
  ...['10.0.0.1/', '10.0.0.1/24/8', '::1//64'].map((entry): [Record<string, string>, string] => [
    { TRUST_PROXY: `127.0.0.1,${entry}` },
    `TRUST_PROXY: ${JSON.stringify(entry)} is invalid; expected a comma list of IP addresses or CIDR ranges`,
  ]),
  [{ PLATFORM_ORIGINS: 'https://*.example.com' },
    'PLATFORM_ORIGINS: "https://*.example.com" is not an origin as browsers send it; expected a comma list of origins like https://play.example.com'],
  [{ DATA_DIR: '/srv/data ' }, 'DATA_DIR: "/srv/data " is invalid; expected a directory path'],
  [{ MANIFESTS_DIR: ' ' }, 'MANIFESTS_DIR: " " is invalid; expected a directory path'],
  // A bridge may listen on port 0 (a free one); the platform must know where to forward.
  [{ TERMINAL_PORT: '0' }, 'TERMINAL_PORT: "0" names no port the platform can forward /terminal-ws/ to; expected the bridge\'s port, 1-65535'],
  // The platform forwards tickets to the bridge in the clear: it is on this machine, as the bridge says.
  [{ TERMINAL_HOST: '10.1.1.1' }, 'TERMINAL_HOST: "10.1.1.1" is not a loopback address; expected 127.0.0.1, ::1 or localhost'],
  // IPv6 too: only ::1 is loopback (CONTRACT §1: the bridge refuses a non-loopback host).
  [{ TERMINAL_HOST: '::' }, 'TERMINAL_HOST: "::" is not a loopback address; expected 127.0.0.1, ::1 or localhost'],
  [{ TERMINAL_HOST: '[2001:db8::1]' }, 'TERMINAL_HOST: "2001:db8::1" is not a loopback address; expected 127.0.0.1, ::1 or localhost'],
  // Mapped into IPv6, an address off loopback is still off it.
  [{ TERMINAL_HOST: '::ffff:10.0.0.1' }, 'TERMINAL_HOST: "::ffff:10.0.0.1" is not a loopback address; expected 127.0.0.1, ::1 or localhost'],
  [{ PORT: '65536' }, 'PORT: "65536" is invalid; expected an integer from 0 to 65535'],
  [{ TRUST_PROXY: '10.0.0.0/33' }, 'TRUST_PROXY: "10.0.0.0/33" is invalid; expected a comma list of IP addresses or CIDR ranges'],
  [{ TRUST_PROXY: '::1/129' }, 'TRUST_PROXY: "::1/129" is invalid; expected a comma list of IP addresses or CIDR ranges'],
  [{ GAME_BACKEND: 'nakama', NAKAMA_URL: 'http://127.0.0.1:7350', NAKAMA_SERVER_KEY: 'server:key', NAKAMA_HTTP_KEY: 'httpkey' },
    'NAKAMA_SERVER_KEY: (10 characters, not shown) is invalid; expected a non-empty string without spaces or colons (Basic auth ends the key at the first colon)'],
  [{ GAME_BACKEND: 'nakama', NAKAMA_URL: 'http://127.0.0.1:7350', NAKAMA_SERVER_KEY: 'serverkey', NAKAMA_HTTP_KEY: 'http:key' },
    'NAKAMA_HTTP_KEY: (8 characters, not shown) is invalid; expected a non-empty string without spaces or colons (Basic auth ends the key at the first colon)'],
  // fetch refuses a URL with credentials: every Nakama call would fail. The password is not echoed.
  [{ GAME_BACKEND: 'nakama', NAKAMA_URL: 'http://user:pw@127.0.0.1:7350', NAKAMA_SERVER_KEY: 'serverkey', NAKAMA_HTTP_KEY: 'httpkey' },
    'NAKAMA_URL: (a URL with a user name or password, not shown) is invalid; expected an http(s) URL without credentials, such as http://127.0.0.1:7350 (the keys go in NAKAMA_SERVER_KEY and NAKAMA_HTTP_KEY)'],
  // One that fails the URL pattern first (a trailing space an env file's quotes kept) is not echoed either.
  [{ GAME_BACKEND: 'nakama', NAKAMA_URL: 'http://admin:s3cr3t-pw@127.0.0.1:7350 ', NAKAMA_SERVER_KEY: 'serverkey', NAKAMA_HTTP_KEY: 'httpkey' },
    'NAKAMA_URL: (a URL with a user name or password, not shown) is invalid; expected an http(s) URL'],
]

t.test('loadPlatformConfig: defaults of CONTRACT §1, frozen', async (t) => {
  const config = loadPlatformConfig({})
  t.match(config, {
    host: '127.0.0.1',
    port: 3000,
    origins: ['http://127.0.0.1:3000', 'http://localhost:3000'],
    dataDir: path.resolve('./data'),
    manifestsDir: path.resolve('./manifests'),
    screenshotsDir: path.resolve('./data/screenshots'),
    gameBackend: 'embedded',
    nakama: null,
    sessionSecret: null,
    devAccessUsers: [],
    devAccessAll: false,
  })
  t.ok(Object.isFrozen(config))
  t.equal(loadPlatformConfig({ DATA_DIR: '/srv/pf' }).screenshotsDir, '/srv/pf/screenshots', 'SCREENSHOTS_DIR follows DATA_DIR')
  t.same(loadPlatformConfig({ PLATFORM_ORIGINS: ' https://a.example.com , http://b.example.com:8080 ' }).origins, ['https://a.example.com', 'http://b.example.com:8080'], 'spaces around the commas')
  t.same(loadPlatformConfig({ DEV_ACCESS_USERS: ' alice , 0f4618f9-2e9b-46ca-99f0-64c05cc7301d,bob ' }).devAccessUsers, ['alice', '0f4618f9-2e9b-46ca-99f0-64c05cc7301d', 'bob'], 'DEV_ACCESS_USERS: spaces around the commas')
  t.same(loadPlatformConfig({ TRUST_PROXY: ' 10.0.0.1 , ::1 ' }).trustProxy.check('::1', 'ipv6'), true, 'TRUST_PROXY: spaces around the commas')
  t.same(loadPlatformConfig({ PLATFORM_ORIGINS: 'http://web_app:3000,http://[::1]:3000,https://xn--bcher-kva.example' }).origins,
    ['http://web_app:3000', 'http://[::1]:3000', 'https://xn--bcher-kva.example'], 'hosts browsers send: underscores, IPv6, punycode')
  t.same(loadPlatformConfig({ PORT: '8080' }).origins,
    ['http://127.0.0.1:3000', 'http://localhost:3000', 'http://127.0.0.1:8080', 'http://localhost:8080'], 'without PLATFORM_ORIGINS, another PORT is a platform origin too')
  t.same(loadBridgeConfig({ PORT: '8080' }).origins, loadPlatformConfig({ PORT: '8080' }).origins, 'for the bridge as for the platform')
  t.same(loadPlatformConfig({ PORT: '80' }).origins,
    ['http://127.0.0.1:3000', 'http://localhost:3000', 'http://127.0.0.1', 'http://localhost'], 'port 80 as browsers write it, without the port')
  for (const port of ['3000', '0', '080', '70000', 'x']) {
    t.same(loadBridgeConfig({ PORT: port }).origins, ['http://127.0.0.1:3000', 'http://localhost:3000'], `PORT=${port} adds no origin`)
  }
  t.same(loadPlatformConfig({ PORT: '8080', PLATFORM_ORIGINS: 'https://play.example.com' }).origins, ['https://play.example.com'], 'PLATFORM_ORIGINS, when set, is the whole list')
  t.equal(loadPlatformConfig({ HOST: '[::1]' }).host, '::1', 'a bracketed IPv6 host is the address')
  t.equal(loadPlatformConfig({ PORT: '65535' }).port, 65535, 'the highest port')
  t.equal(loadPlatformConfig({ SESSION_SECRET: `${'a'.repeat(32)},${'b'.repeat(32)}` }).sessionSecret, `${'a'.repeat(32)},${'b'.repeat(32)}`, 'secrets of exactly 32 characters')
  const single = loadPlatformConfig({ TRUST_PROXY: '192.0.2.7/32,2001:db8::7/128' }).trustProxy
  t.same([single.check('192.0.2.7', 'ipv4'), single.check('192.0.2.8', 'ipv4'), single.check('2001:db8::7', 'ipv6'), single.check('2001:db8::8', 'ipv6')], [true, false, true, false], 'TRUST_PROXY: /32 and /128 are one address each')
  t.equal(loadPlatformConfig({ TERMINAL_HOST: '[::1]' }).terminalHost, '::1', 'the bridge address too')
  // Every spelling of a loopback address is one: a name in any case, ::1 written out, 127/8 IPv4-mapped.
  for (const host of ['LOCALHOST', '127.0.0.2', '0:0:0:0:0:0:0:1', '::ffff:127.0.0.1', '[::ffff:7f00:1]']) {
    t.equal(loadPlatformConfig({ TERMINAL_HOST: host }).terminalHost, host.replace(/^\[|\]$/g, ''), `TERMINAL_HOST=${host} is loopback`)
  }
})

t.test('a variable set to the empty string counts as unset (PORT= in a unit file): its default, or missing when required', async (t) => {
  const names = ['HOST', 'PORT', 'PLATFORM_ORIGINS', 'DATA_DIR', 'MANIFESTS_DIR', 'SCREENSHOTS_DIR', 'GAME_BACKEND', 'SESSION_SECRET', 'TERMINAL_TICKET_SECRET', 'TERMINAL_HOST', 'TERMINAL_PORT', 'DEV_ACCESS_USERS', 'DEV_ACCESS_ALL', 'TRUST_PROXY']
  const empty = Object.fromEntries(names.map((name) => [name, '']))
  const { trustProxy: emptyTrust, ...fromEmpty } = loadPlatformConfig(empty)
  const { trustProxy: defaultTrust, ...defaults } = loadPlatformConfig({})
  t.strictSame(fromEmpty, defaults, 'every value as if unset')
  t.equal(emptyTrust.check('127.0.0.1', 'ipv4'), defaultTrust.check('127.0.0.1', 'ipv4'), 'TRUST_PROXY too')
  const bridgeEmpty = loadBridgeConfig({ TERMINAL_MAX_CONN: '', TERMINAL_USER: '', SHELL: '', TERMINAL_PORT: '' })
  t.match(bridgeEmpty, { maxConn: 4, user: null, shell: '/bin/bash', port: 7681 }, 'the bridge\'s variables too')
  t.match(loadBridgeConfig({ TERMINAL_ACCESS_CHECK_S: '', HOST: '', PORT: '' }), { accessCheckMs: 30_000, platformUrl: 'http://127.0.0.1:3000' }, 'and its access checks')
  t.throws(() => loadPlatformConfig({ GAME_BACKEND: 'nakama', NAKAMA_URL: '', NAKAMA_SERVER_KEY: 'serverkey', NAKAMA_HTTP_KEY: 'httpkey' }),
    new ConfigError('NAKAMA_URL: missing; required when GAME_BACKEND=nakama (an http(s) URL)'), 'an empty required one is missing')
})

t.test('the bridge listens on 127.0.0.1 when TERMINAL_HOST is unset: its bridge.listening line', async (t) => {
  const bridge = await startBridge({ TERMINAL_HOST: undefined })
  t.teardown(() => bridge.stop())
  t.match(bridge.logs.find((l) => l.event === 'bridge.listening'), { host: '127.0.0.1', port: bridge.port }, 'the default host, loopback')
})

t.test("the bridge's listening line says where it checks open terminals' access, or that it does not", async (t) => {
  const checking = await startBridge({ TERMINAL_ACCESS_CHECK_S: '30', HOST: '0.0.0.0', PORT: '8080' })
  t.teardown(() => checking.stop())
  t.same(checking.logs.find((l) => l.event === 'bridge.listening')?.accessCheck, { platform: 'http://127.0.0.1:8080', seconds: 30 })
  for (const env of [{ TERMINAL_ACCESS_CHECK_S: '0' }, { TERMINAL_ACCESS_CHECK_S: '30', PORT: '0' }]) {
    const off = await startBridge(env)
    t.equal(off.logs.find((l) => l.event === 'bridge.listening')?.accessCheck, null, JSON.stringify(env))
    await off.stop()
  }
})

t.test('the bridge asks the platform where HOST and PORT put it, every TERMINAL_ACCESS_CHECK_S (30 by default, 0 never)', async (t) => {
  const urls: [Record<string, string>, string | null][] = [
    [{}, 'http://127.0.0.1:3000'],
    [{ PORT: '8080' }, 'http://127.0.0.1:8080'],
    [{ HOST: '0.0.0.0', PORT: '8080' }, 'http://127.0.0.1:8080'],
    [{ HOST: '::' }, 'http://[::1]:3000'],
    [{ HOST: '[::1]' }, 'http://[::1]:3000'],
    [{ HOST: 'localhost' }, 'http://localhost:3000'],
    [{ HOST: '10.1.2.3', PORT: '80' }, 'http://10.1.2.3:80'],
    // A port the platform picks, and values the platform refuses to start with: nothing to ask.
    [{ PORT: '0' }, null],
    [{ PORT: '70000' }, null],
    [{ PORT: 'x' }, null],
    [{ HOST: 'bad host' }, null],
  ]
  for (const [env, url] of urls) t.equal(loadBridgeConfig(env).platformUrl, url, JSON.stringify(env))
  t.equal(loadBridgeConfig({ TERMINAL_ACCESS_CHECK_S: '0' }).accessCheckMs, 0, '0: no checks')
  t.equal(loadBridgeConfig({ TERMINAL_ACCESS_CHECK_S: '5' }).accessCheckMs, 5_000)
  for (const value of ['-1', '1.5', 'x', '100000', '030']) {
    t.throws(() => loadBridgeConfig({ TERMINAL_ACCESS_CHECK_S: value }),
      new ConfigError(`TERMINAL_ACCESS_CHECK_S: ${JSON.stringify(value)} is invalid; expected a whole number of seconds from 0 to 99999`), value)
  }
})

t.test('a bad TERMINAL_MAX_CONN stops the bridge: exit 2 and only its line on stderr', async (t) => {
  for (const value of ['abc', '0', '10000', '1.5', '-1']) {
    const error = await startBridge({ TERMINAL_MAX_CONN: value }).then(async (bridge) => {
      await bridge.stop()
      return new Error(`started, with max ${String(bridge.logs.find((l) => l.event === 'bridge.listening')?.max)}`)
    }, (err: Error) => err)
    t.equal(error.message, `process exited (2) before ready: config: TERMINAL_MAX_CONN: ${JSON.stringify(value)} is invalid; expected an integer from 1 to 9999\n`, value)
  }
})

t.test('loadPlatformConfig: each bad variable is a ConfigError with its one line', async (t) => {
  for (const [env, line] of BAD) {
    t.throws(() => loadPlatformConfig(env), new ConfigError(line), line)
  }
})

t.test('a bad environment variable stops the platform: exit 2 and only its line on stderr', async (t) => {
  for (const [env, line] of [...BAD.slice(0, 4), BAD[BAD.length - 1]!, ...MISSING_KEYS]) {
    const error = await startPlatform({ env }).then(() => new Error('started'), (err: Error) => err)
    t.equal(error.message, `process exited (2) before ready: config: ${line}\n`, line)
  }
  const run = await runPlatform(['check'], { DATA_DIR: tempDir(), PORT: 'abc' })
  t.strictSame(run, { code: 2, stderr: 'config: PORT: "abc" is invalid; expected an integer from 0 to 65535\n' }, 'check too')
  const users = await runPlatform(['users', 'list'], { DATA_DIR: '/dev/null/x' })
  t.strictSame(users, { code: 2, stderr: 'config: DATA_DIR: "/dev/null/x" cannot be used (ENOTDIR); expected a directory path\n' }, 'users too, on an unusable DATA_DIR')
})

/** An account other than this one, which may not write a directory of this one's (mode 0555): the shell account for root, else none needed. */
interface Account { uid?: number; gid?: number }

/**
 * Run `program` with only PATH and `env`, from `cwd`, as the account `as` when given: its exit
 * code, stdout and stderr. As another account, without the NODE_OPTIONS tap's process tracking adds
 * to every child: its exit hook writes into this repository's .tap/, which that account may not.
 */
function runBin(program: string, args: string[], env: Record<string, string>, { cwd = ROOT, as = {} }: { cwd?: string; as?: Account } = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const [file, argv] = as.uid === undefined ? [program, args] : ['env', ['-u', 'NODE_OPTIONS', program, ...args]]
  return new Promise((resolve) => {
    execFile(file, argv, { env: { PATH: process.env.PATH!, ...env }, cwd, ...as }, (err, stdout, stderr) =>
      resolve({ code: err && typeof err.code === 'number' ? err.code : 0, stdout, stderr }),
    )
  })
}

/** Run bin/platform (or `program`, a link to it) as runBin does: its exit code and stderr. */
async function runPlatform(args: string[], env: Record<string, string>, cwd = ROOT, program = path.join(ROOT, 'bin/platform'), as: Account = {}): Promise<{ code: number | null; stderr: string }> {
  const { code, stderr } = await runBin(program, args, env, { cwd, as })
  return { code, stderr }
}

/** Run bin/terminal-bridge as runBin does. */
const runBridge = (args: string[], env: Record<string, string>, as: Account = {}): ReturnType<typeof runBin> => runBin(path.join(ROOT, 'bin/terminal-bridge'), args, env, { as })

/** A directory this process made that `other` may read but not write, and that account (none needed unless root). */
function closedDir(): { dir: string; other: Account } {
  const dir = tempDir()
  chmodSync(dir, 0o555)
  if (process.getuid?.() !== 0) return { dir, other: {} }
  // Root may write anywhere: the shell account stands in for a user who may not.
  ensureShellUser()
  return { dir, other: { uid: uidOf(SHELL_USER), gid: gidOf(SHELL_USER) } }
}

t.test('bin/terminal-bridge check: the bridge\'s settings as its start takes them, before an upgrade\'s restart; it writes nothing and exits', async (t) => {
  const root = process.getuid?.() === 0
  if (root) ensureShellUser()
  const account = root ? SHELL_USER : os.userInfo().username
  const dataDir = tempDir()
  const env = { DATA_DIR: dataDir, ...(root ? { TERMINAL_USER: SHELL_USER } : {}) }
  t.strictSame(await runBridge(['check'], { ...env, TERMINAL_MAX_CONN: '7', TERMINAL_HOST: '::1' }), {
    code: 0,
    stdout: `bridge settings ok: shells run as ${account} (/bin/bash), at most 7 connections, on ::1\n`,
    stderr: '',
  })
  t.same(readdirSync(dataDir), [], 'no secret or anything else was made in DATA_DIR')
  t.strictSame(await runBridge(['check'], { ...env, TERMINAL_MAX_CONN: '0' }), { code: 2, stdout: '', stderr: 'config: TERMINAL_MAX_CONN: "0" is invalid; expected an integer from 1 to 9999\n' }, 'a value the start refuses')
  t.strictSame(await runBridge(['check'], { ...env, SHELL: '/etc/passwd' }), { code: 2, stdout: '', stderr: 'config: SHELL: "/etc/passwd" is not executable; expected an absolute path to a shell\n' }, 'a shell that is no program')
  // Found in review: check passed a DATA_DIR and a stored secret the start refuses.
  t.strictSame(await runBridge(['check'], { ...env, DATA_DIR: '/etc/hostname' }), { code: 2, stdout: '', stderr: 'config: DATA_DIR: "/etc/hostname" is not a directory; expected a directory path\n' }, 'a DATA_DIR that is a file')
  const short = tempDir()
  mkdirSync(path.join(short, 'secrets'))
  writeFileSync(path.join(short, 'secrets', 'terminal-ticket-secret'), 'short\n')
  const file = JSON.stringify(path.join(short, 'secrets', 'terminal-ticket-secret'))
  t.strictSame(await runBridge(['check'], { ...env, DATA_DIR: short }), { code: 2, stdout: '', stderr: `config: DATA_DIR: ${file} holds no usable secret (5 characters); expected at least 32 characters on one line: delete the file to have a new one generated\n` }, 'a stored secret the start would refuse')
  const missing = path.join(tempDir(), 'data')
  t.equal((await runBridge(['check'], { ...env, DATA_DIR: missing })).code, 0, 'a DATA_DIR the start would make')
  t.notOk(existsSync(missing), 'and check does not make it')
  // Found in review: check passed a DATA_DIR where the start could not make the secret.
  const { dir: closed, other } = closedDir()
  const refusal = (dir: string): string => `config: DATA_DIR: the secret file ${JSON.stringify(path.join(dir, 'secrets', 'terminal-ticket-secret'))} cannot be read or created (EACCES); expected a DATA_DIR this user can write, or the secret in its environment variable\n`
  t.strictSame(await runBridge(['check'], { DATA_DIR: closed }, other), { code: 2, stdout: '', stderr: refusal(closed) }, 'no secret, and a DATA_DIR this user may not write')
  const under = path.join(closed, 'data')
  t.strictSame(await runBridge(['check'], { DATA_DIR: under }, other), { code: 2, stdout: '', stderr: `config: DATA_DIR: ${JSON.stringify(under)} cannot be created (EACCES); expected a directory path\n` }, 'no DATA_DIR, and a parent this user may not write')
  // The start's own line, each time (found in review: the second differed).
  for (const dir of [closed, under]) {
    t.strictSame(await runBridge([], { DATA_DIR: dir }, other), await runBridge(['check'], { DATA_DIR: dir }, other), `the start says the same of ${dir === closed ? 'the first' : 'the second'}`)
  }
  // The folder is closed to the bridge's user, which is this process unless it is root: it opens
  // the folder for the moment it stores the secret there.
  chmodSync(closed, 0o755)
  mkdirSync(path.join(closed, 'secrets'), { mode: 0o755 })
  writeFileSync(path.join(closed, 'secrets', 'terminal-ticket-secret'), 'x'.repeat(43) + '\n', { mode: 0o644 })
  chmodSync(closed, 0o555)
  t.equal((await runBridge(['check'], { DATA_DIR: closed }, other)).code, 0, 'a secret stored there is read, and nothing more is needed')
  t.equal((await runBridge(['check'], { DATA_DIR: closed, TERMINAL_TICKET_SECRET: 'y'.repeat(43) }, other)).code, 0, 'nor with the secret in the environment')
  if (root) {
    t.strictSame(await runBridge(['check'], { DATA_DIR: dataDir }), { code: 2, stdout: '', stderr: 'config: TERMINAL_USER: must name an unprivileged account when the bridge runs as root; shells never run as root\n' }, 'a root bridge without TERMINAL_USER')
  }
  for (const args of [['check', 'now'], ['chek'], ['--help']]) {
    t.strictSame(await runBridge(args, env), { code: 64, stdout: '', stderr: 'usage: terminal-bridge [check]\n' }, `usage for ${args.join(' ')}`)
  }
})

t.test('bin/terminal-bridge check: a secrets folder this user may not write, with no secret in it, is refused as the start refuses it, though DATA_DIR is writable', async (t) => {
  // checkStoredSecret looks where the start would make the secret: in secrets/ when it is there, not in DATA_DIR.
  const { dir, other } = closedDir()
  chmodSync(dir, 0o777)
  mkdirSync(path.join(dir, 'secrets'), { mode: 0o555 })
  const file = JSON.stringify(path.join(dir, 'secrets', 'terminal-ticket-secret'))
  const refused = { code: 2, stdout: '', stderr: `config: DATA_DIR: the secret file ${file} cannot be read or created (EACCES); expected a DATA_DIR this user can write, or the secret in its environment variable\n` }
  t.strictSame(await runBridge(['check'], { DATA_DIR: dir }, other), refused, 'check')
  t.strictSame(await runBridge([], { DATA_DIR: dir }, other), refused, 'the start says the same')
  t.same(readdirSync(path.join(dir, 'secrets')), [], 'nothing made')
})

t.test('bin/platform works through a link and from another directory; there a missing MANIFESTS_DIR stops it before it makes ./data; check refuses an unusable SCREENSHOTS_DIR, and a DATA_DIR it could not write or make, as the start does', async (t) => {
  const elsewhere = tempDir()
  const link = path.join(elsewhere, 'platform-link')
  symlinkSync(path.join(ROOT, 'bin/platform'), link)
  const manifests = path.join(ROOT, 'manifests')
  t.strictSame(await runPlatform(['check'], { MANIFESTS_DIR: manifests, DATA_DIR: tempDir() }, elsewhere, link), { code: 0, stderr: '' }, 'through a link, from elsewhere')
  const missing = await runPlatform([], {}, elsewhere, link)
  t.strictSame(missing, { code: 2, stderr: `config: MANIFESTS_DIR: ${JSON.stringify(path.join(elsewhere, 'manifests'))} does not exist; expected a directory of game manifests\n` })
  t.notOk(existsSync(path.join(elsewhere, 'data')), 'no ./data made where it was run')
  const file = path.join(elsewhere, 'a-file')
  writeFileSync(file, 'not a directory')
  t.strictSame(
    await runPlatform(['check'], { MANIFESTS_DIR: manifests, SCREENSHOTS_DIR: file }),
    { code: 2, stderr: `config: SCREENSHOTS_DIR: ${JSON.stringify(file)} is not a directory; expected a directory path\n` },
    'check: SCREENSHOTS_DIR as the start reports it',
  )
  // Found in review: check passed a DATA_DIR the start could not write or make.
  const { dir: closed, other } = closedDir()
  t.strictSame(await runPlatform(['check'], { MANIFESTS_DIR: manifests, DATA_DIR: closed }, ROOT, undefined, other), { code: 2, stderr: `config: DATA_DIR: ${JSON.stringify(closed)} is not writable; expected a directory this user can write\n` }, 'check: a DATA_DIR this user may not write')
  const under = path.join(closed, 'data', 'deeper')
  t.strictSame(await runPlatform(['check'], { MANIFESTS_DIR: manifests, DATA_DIR: under }, ROOT, undefined, other), { code: 2, stderr: `config: DATA_DIR: ${JSON.stringify(under)} cannot be created (EACCES); expected a directory path\n` }, 'check: a DATA_DIR under a folder this user may not write')
  for (const dir of [closed, under]) {
    t.strictSame(await runPlatform([], { MANIFESTS_DIR: manifests, DATA_DIR: dir }, ROOT, undefined, other), await runPlatform(['check'], { MANIFESTS_DIR: manifests, DATA_DIR: dir }, ROOT, undefined, other), `the start says the same of ${dir === closed ? 'the first' : 'the second'}`)
  }
  t.same(readdirSync(closed), [], 'nothing made')
  const ours = path.join(tempDir(), 'data', 'deeper')
  t.strictSame(await runPlatform(['check'], { MANIFESTS_DIR: manifests, DATA_DIR: ours }), { code: 0, stderr: '' }, 'check: a DATA_DIR the start would make')
  t.notOk(existsSync(path.dirname(ours)), 'and check does not make it')
  // The nearest folder that exists may be any number of levels up, as the start makes them all.
  const deep = path.join(tempDir(), 'a', 'b', 'c')
  t.strictSame(await runPlatform(['check'], { MANIFESTS_DIR: manifests, DATA_DIR: deep }), { code: 0, stderr: '' }, 'check: a DATA_DIR three folders below the nearest that exists')
  t.notOk(existsSync(path.join(deep, '..', '..')), 'and check makes none of them')
})

t.test('a DATA_DIR that is, or lies under, a symbolic link to nothing: check refuses it as the start does, for both processes', async (t) => {
  // Found by the mutation audit: stat's ENOENT read as "not made yet", so check passed what the
  // start could neither make (mkdir: EEXIST) nor use, and the start called it "not writable".
  const dir = tempDir()
  const nowhere = path.join(dir, 'nowhere')
  symlinkSync(nowhere, path.join(dir, 'data'))
  symlinkSync(path.join(dir, 'nowhere2'), path.join(dir, 'link'))
  const manifests = path.join(ROOT, 'manifests')
  const cases = [
    { dataDir: path.join(dir, 'data'), what: `is a symbolic link to ${JSON.stringify(nowhere)}, which does not exist` },
    { dataDir: path.join(dir, 'link', 'data'), what: `cannot be created: ${JSON.stringify(path.join(dir, 'link'))} is a symbolic link to ${JSON.stringify(path.join(dir, 'nowhere2'))}, which does not exist` },
  ]
  const bridgeEnv: Record<string, string> = process.getuid?.() === 0 ? { TERMINAL_USER: SHELL_USER } : {}
  if (process.getuid?.() === 0) ensureShellUser()
  for (const { dataDir, what } of cases) {
    const stderr = `config: DATA_DIR: ${JSON.stringify(dataDir)} ${what}; expected a directory path\n`
    t.strictSame(await runPlatform(['check'], { MANIFESTS_DIR: manifests, DATA_DIR: dataDir }), { code: 2, stderr }, `platform check: ${dataDir}`)
    t.strictSame(await runPlatform([], { MANIFESTS_DIR: manifests, DATA_DIR: dataDir, PORT: '0' }), { code: 2, stderr }, 'the platform\'s start says the same')
    t.strictSame(await runBridge(['check'], { ...bridgeEnv, DATA_DIR: dataDir }), { code: 2, stdout: '', stderr }, 'bridge check')
    t.strictSame(await runBridge([], { ...bridgeEnv, DATA_DIR: dataDir, TERMINAL_PORT: '0' }), { code: 2, stdout: '', stderr }, 'the bridge\'s start says the same')
  }
  t.notOk(existsSync(nowhere), 'nothing made where the link points')
  t.notOk(existsSync(path.join(dir, 'nowhere2')))
})

// Found by a mutation audit: without the bridge's own examples its line offered 0.0.0.0, an address
// it refuses, and nothing noticed. A network namespace of its own has no usable ::1 (lo is down).
t.test('a loopback TERMINAL_HOST the bridge cannot listen on: exit 2, and its line offers loopback addresses only', spawnSync('unshare', ['--net', 'true']).status === 0 ? {} : { skip: 'needs unshare --net (root)' }, async (t) => {
  const error = await startRefused({ script: BRIDGE_JS, readyEvent: 'bridge.listening', wrapper: ['unshare', '--net'], env: { TERMINAL_HOST: '::1', TERMINAL_PORT: '0', TERMINAL_USER: 'nobody' } })
  t.equal(error.message, 'process exited (2) before ready: config: TERMINAL_HOST: "::1" cannot be listened on (EADDRNOTAVAIL); expected an address of this machine, such as 127.0.0.1 or ::1 (loopback only)\n')
})

t.test('a database locked past its busy time-out at start is no config error: one line, exit 1, which systemd restarts', async (t) => {
  const dataDir = tempDir()
  // A database made by a first start, then held by another process's write transaction.
  const first = await startPlatform({ dataDir })
  await first.stop()
  const holder = new Database(path.join(dataDir, 'playfield.sqlite'))
  holder.prepare('BEGIN IMMEDIATE').run()
  t.teardown(() => holder.close())
  const error = await startPlatform({ dataDir }).then(() => new Error('started'), (err: Error) => err)
  t.equal(error.message, 'process exited (1) before ready: platform: cannot start: database is locked\n')
})

t.test('a database this process can read but not write stops the start as a config error, before any request', async (t) => {
  const dataDir = tempDir()
  const first = await startPlatform({ dataDir })
  await first.stop()
  // Header byte 18 above 2 (a newer SQLite's format) makes SQLite open the file read-only, as a
  // file of another account with mode 0400 does for a process that is not root.
  const file = path.join(dataDir, 'playfield.sqlite')
  const fd = openSync(file, 'r+')
  writeSync(fd, Buffer.from([3]), 0, 1, 18)
  closeSync(fd)
  const error = await startPlatform({ dataDir }).then(() => new Error('started'), (err: Error) => err)
  t.equal(
    error.message,
    `process exited (2) before ready: config: DATA_DIR: the database "${file}" cannot be used (SQLITE_READONLY: attempt to write a readonly database); expected a DATA_DIR whose playfield.sqlite is a SQLite database this user can read and write\n`,
  )
})

t.test('an unusable directory or listen address is a bad value too: exit 2 and one line naming its variable', async (t) => {
  const busy = net.createServer()
  await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve))
  t.teardown(() => busy.close())
  const busyPort = (busy.address() as net.AddressInfo).port
  const file = path.join(tempDir(), 'a-file')
  writeFileSync(file, 'not a directory')
  const expected = 'expected a directory path'
  // A DATA_DIR whose secrets folder cannot be made (a file stands there): as for one this user may not write.
  const noSecrets = tempDir()
  writeFileSync(path.join(noSecrets, 'secrets'), 'not a directory')
  // A DATA_DIR that is fine but whose database is no database, or a directory.
  const corrupt = tempDir()
  writeFileSync(path.join(corrupt, 'playfield.sqlite'), 'garbage, not a database')
  const dirDb = tempDir()
  mkdirSync(path.join(dirDb, 'playfield.sqlite'))
  const dbLine = (dir: string, why: string) =>
    `DATA_DIR: the database "${dir}/playfield.sqlite" cannot be used (${why}); expected a DATA_DIR whose playfield.sqlite is a SQLite database this user can read and write`
  const secretLine = (dir: string) =>
    new RegExp(`^DATA_DIR: the secret file "${dir}/secrets/[a-z-]+" cannot be read or created \\(E[A-Z]+\\); expected a DATA_DIR this user can write, or the secret in its environment variable$`)
  const cases: [Record<string, string>, string | RegExp, string?][] = [
    // The resolver's answer for a name that is no address differs by machine (ENOTFOUND, EAI_AGAIN).
    [{ HOST: '999.1.1.1' }, /^HOST: "999\.1\.1\.1" cannot be listened on \(E[A-Z_]+\); expected an address of this machine, such as 127\.0\.0\.1 or 0\.0\.0\.0$/],
    [{ HOST: '192.0.2.1' }, 'HOST: "192.0.2.1" cannot be listened on (EADDRNOTAVAIL); expected an address of this machine, such as 127.0.0.1 or 0.0.0.0'],
    [{ PORT: String(busyPort) }, `PORT: ${busyPort} is already in use on 127.0.0.1; expected a free port`],
    [{ DATA_DIR: '/dev/null/x' }, `DATA_DIR: "/dev/null/x" cannot be used (ENOTDIR); ${expected}`],
    [{ DATA_DIR: file }, `DATA_DIR: ${JSON.stringify(file)} is not a directory; ${expected}`],
    [{ DATA_DIR: '/proc/playfield-nowhere/data' }, `DATA_DIR: "/proc/playfield-nowhere/data" cannot be created (ENOENT); ${expected}`, 'under a parent that refuses entries: no endless mkdir'],
    [{ DATA_DIR: noSecrets }, secretLine(noSecrets), 'a DATA_DIR where no secret can be generated'],
    [{ DATA_DIR: corrupt }, dbLine(corrupt, 'SQLITE_NOTADB: file is not a database'), 'a database file that is no database: no stack trace'],
    [{ DATA_DIR: dirDb }, dbLine(dirDb, 'SQLITE_CANTOPEN: unable to open database file'), 'a directory where the database should be'],
    [{ SCREENSHOTS_DIR: '/dev/null/x' }, `SCREENSHOTS_DIR: "/dev/null/x" cannot be read (ENOTDIR); ${expected}`],
    [{ SCREENSHOTS_DIR: file }, `SCREENSHOTS_DIR: ${JSON.stringify(file)} is not a directory; ${expected}`],
    [{ MANIFESTS_DIR: '/nonexistent/manifests' }, 'MANIFESTS_DIR: "/nonexistent/manifests" does not exist; expected a directory of game manifests'],
    [{ MANIFESTS_DIR: file }, `MANIFESTS_DIR: ${JSON.stringify(file)} is not a directory; expected a directory of game manifests`],
  ]
  for (const [env, line, label] of cases) {
    const error = await startPlatform({ env }).then(() => new Error('started'), (err: Error) => err)
    const match = /^process exited \(2\) before ready: config: (.*)\n$/.exec(error.message)
    t.ok(match, `${label ?? JSON.stringify(env)}: exit 2 with one config line, not ${JSON.stringify(error.message.slice(0, 200))}`)
    if (typeof line === 'string') t.equal(match?.[1], line)
    else t.match(match?.[1], line)
  }
  const bridge = await startPlatform({ script: BRIDGE_JS, readyEvent: 'bridge.listening', env: { TERMINAL_PORT: String(busyPort), TERMINAL_USER: 'nobody' } }).then(
    () => new Error('started'),
    (err: Error) => err,
  )
  t.equal(bridge.message, `process exited (2) before ready: config: TERMINAL_PORT: ${busyPort} is already in use on 127.0.0.1; expected a free port\n`, 'the bridge too')
  // The bridge reads the ticket secret from DATA_DIR when the environment has none.
  const bridgeDir = await startPlatform({ script: BRIDGE_JS, readyEvent: 'bridge.listening', env: { DATA_DIR: '/dev/null/x', TERMINAL_USER: 'nobody' } }).then(
    () => new Error('started'),
    (err: Error) => err,
  )
  const bridgeShell = await startPlatform({ script: BRIDGE_JS, readyEvent: 'bridge.listening', env: { SHELL: '/nonexistent/shell', TERMINAL_USER: 'nobody' } }).then(
    () => new Error('started'),
    (err: Error) => err,
  )
  t.equal(bridgeShell.message, 'process exited (2) before ready: config: SHELL: "/nonexistent/shell" cannot be used (ENOENT); expected an absolute path to a shell\n', 'a missing shell')
  t.equal(bridgeDir.message, `process exited (2) before ready: config: DATA_DIR: "/dev/null/x" cannot be used (ENOTDIR); ${expected}\n`, 'the bridge\'s DATA_DIR')
  // /proc refuses new entries: the secrets folder is one mkdir, not mkdirSync's endless recursive loop.
  const bridgeProc = await startPlatform({ script: BRIDGE_JS, readyEvent: 'bridge.listening', env: { DATA_DIR: '/proc', TERMINAL_USER: 'nobody' } }).then(
    () => new Error('started'),
    (err: Error) => err,
  )
  t.match(bridgeProc.message, /^process exited \(2\) before ready: config: DATA_DIR: the secret file "\/proc\/secrets\/terminal-ticket-secret" cannot be read or created \(E[A-Z]+\);/, 'a bridge DATA_DIR under which nothing can be made')
  const bridgeSecrets = await startPlatform({ script: BRIDGE_JS, readyEvent: 'bridge.listening', env: { DATA_DIR: noSecrets, TERMINAL_USER: 'nobody' } }).then(
    () => new Error('started'),
    (err: Error) => err,
  )
  t.match(/^process exited \(2\) before ready: config: (.*)\n$/.exec(bridgeSecrets.message)?.[1], secretLine(noSecrets), 'the bridge without a ticket secret it can read')
})
