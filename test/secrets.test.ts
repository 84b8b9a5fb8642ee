import t from 'tap'
import { execFile } from 'node:child_process'
import fs, { chmodSync, mkdirSync, readdirSync, readFileSync, readlinkSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { syncBuiltinESMExports } from 'node:module'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { ConfigError } from '../lib/config-error.js'
import { loadSecret } from '../lib/secrets.js'
import { BRIDGE_JS, ROOT, startPlatform, tempDir } from './helpers/platform.js'
import { startBridge } from './helpers/terminal.js'

const SECRETS_JS = pathToFileURL(path.join(ROOT, 'dist/lib/secrets.js')).href

t.test('a generated secret: 43 characters, mode 0600, reused, no draft left behind', async (t) => {
  const dir = tempDir()
  const [secret] = loadSecret(dir, 'example', null)
  t.match(secret, /^[A-Za-z0-9_-]{43}$/)
  const file = path.join(dir, 'secrets', 'example')
  t.equal(statSync(file).mode & 0o777, 0o600)
  t.equal(readFileSync(file, 'utf8'), `${secret}\n`)
  t.same(loadSecret(dir, 'example', null), [secret], 'read back, not made again')
  t.same(readdirSync(path.join(dir, 'secrets')), ['example'])
  t.same(loadSecret(dir, 'example', 'a'.repeat(32) + ',' + 'b'.repeat(32)), ['a'.repeat(32), 'b'.repeat(32)], 'the environment wins')
})

t.test('drafts left by a process killed while writing a secret go at the next start; one being written beside it stays', async (t) => {
  const dir = tempDir()
  const secrets = path.join(dir, 'secrets')
  mkdirSync(secrets, { mode: 0o700 })
  const stale = path.join(secrets, 'example.4242.0123456789ab.tmp')
  const fresh = path.join(secrets, 'example.4343.ba9876543210.tmp')
  const other = path.join(secrets, 'other.4242.0123456789ab.tmp')
  for (const draft of [stale, fresh, other]) writeFileSync(draft, 'x'.repeat(43) + '\n', { mode: 0o600 })
  const hourAgo = new Date(Date.now() - 3_600_000)
  for (const draft of [stale, other]) fs.utimesSync(draft, hourAgo, hourAgo)
  const [secret] = loadSecret(dir, 'example', null)
  t.match(secret, /^[A-Za-z0-9_-]{43}$/, 'a new secret, not a draft\'s')
  t.same(readdirSync(secrets).sort(), ['example', path.basename(fresh), path.basename(other)].sort(), 'its own stale draft is gone; a minute-young one and another secret\'s are kept')
  loadSecret(dir, 'other', null)
  t.same(readdirSync(secrets).sort(), ['example', path.basename(fresh), 'other'].sort(), 'the other\'s goes when that secret is loaded')
})

t.test('what the platform creates in a new DATA_DIR is its account\'s alone: the directory 0700, every file without group or other bits', async (t) => {
  const parent = path.join(tempDir(), 'fresh')
  const dataDir = path.join(parent, 'data')
  const platform = await startPlatform({ dataDir, env: { SESSION_SECRET: undefined } })
  t.teardown(() => platform.stop())
  t.equal((await fetch(`${platform.url}/api/auth/guest`, { method: 'POST' })).status, 200, 'a sign-in writes the database')
  t.equal(statSync(dataDir).mode & 0o777, 0o700, 'DATA_DIR itself 0700')
  const entries = readdirSync(dataDir, { recursive: true }) as string[]
  t.ok(entries.includes('playfield.sqlite') || platform.logs.some((l) => l.event === 'platform.listening' && l.backend !== 'embedded'), 'the embedded database is there')
  t.ok(entries.some((e) => e.startsWith('secrets')), 'and the generated secrets')
  for (const entry of entries) t.equal(statSync(path.join(dataDir, entry)).mode & 0o077, 0, `${entry} is private`)
})

t.test('an existing DATA_DIR other accounts can enter keeps its mode, and the platform says so at start', async (t) => {
  const dataDir = path.join(tempDir(), 'open')
  mkdirSync(dataDir, { mode: 0o755 })
  chmodSync(dataDir, 0o755)
  const open = await startPlatform({ dataDir })
  await open.stop()
  t.equal(statSync(dataDir).mode & 0o777, 0o755, 'left as it was')
  t.match(open.logs.find((l) => l.event === 'platform.data_dir_open'), { dataDir, mode: '0755', fix: new RegExp(`^chmod 700 ${dataDir}`) })
  chmodSync(dataDir, 0o750)
  const closed = await startPlatform({ dataDir })
  await closed.stop()
  t.notOk(closed.logs.some((l) => l.event === 'platform.data_dir_open'), 'nothing said when only the group may enter')
})

t.test('processes starting together all get the same whole secret', async (t) => {
  for (let round = 0; round < 5; round++) {
    const dir = tempDir()
    const script = `import(${JSON.stringify(SECRETS_JS)}).then((m) => process.stdout.write(m.loadSecret(${JSON.stringify(dir)}, 'shared', null)[0]))`
    const secrets = await Promise.all(
      Array.from({ length: 6 }, () => new Promise<string>((resolve, reject) => {
        execFile(process.execPath, ['-e', script], (err, stdout) => (err ? reject(err) : resolve(stdout)))
      })),
    )
    t.equal(new Set(secrets).size, 1, `round ${round + 1}: one secret`)
    t.match(secrets[0], /^[A-Za-z0-9_-]{43}$/)
    t.same(readdirSync(path.join(dir, 'secrets')), ['shared'], 'no drafts left')
  }
})

t.test('a process that loses the race to publish the secret uses the one in the file, the winner\'s', async (t) => {
  // Six processes starting together rarely meet in the moment between the read that finds no file
  // and the link that publishes a new one: here the other process (the bridge starting beside the
  // platform) publishes its secret in exactly that moment, every time.
  const dir = tempDir()
  const file = path.join(dir, 'secrets', 'raced')
  const winner = 'w'.repeat(43)
  const mutableFs = fs as unknown as { linkSync: typeof fs.linkSync }
  const link = mutableFs.linkSync
  mutableFs.linkSync = (existing, target) => {
    if (String(target) === file) writeFileSync(file, `${winner}\n`, { mode: 0o600, flag: 'wx' })
    return link(existing, target)
  }
  syncBuiltinESMExports()
  t.teardown(() => {
    mutableFs.linkSync = link
    syncBuiltinESMExports()
  })
  t.same(loadSecret(dir, 'raced', null), [winner], 'the key is the one every other process reads from the file')
  t.equal(readFileSync(file, 'utf8'), `${winner}\n`, 'the file is the winner\'s, untouched')
  t.same(readdirSync(path.join(dir, 'secrets')), ['raced'], 'no draft left behind')
})

t.test('a secret file without a usable secret is a configuration error, never a key', async (t) => {
  for (const [content, length] of [['', 0], ['\n', 0], ['short-secret\n', 12], [`${'s'.repeat(31)}\n`, 31], [`${'x'.repeat(20)} ${'y'.repeat(20)}\n`, 41]] as const) {
    const dir = tempDir()
    mkdirSync(path.join(dir, 'secrets'))
    const file = path.join(dir, 'secrets', 'example')
    writeFileSync(file, content)
    t.throws(() => loadSecret(dir, 'example', null), new ConfigError(
      `DATA_DIR: ${JSON.stringify(file)} holds no usable secret (${length} characters); expected at least 32 characters on one line: delete the file to have a new one generated`,
    ), JSON.stringify(content))
    t.equal(readFileSync(file, 'utf8'), content, 'the file is left as it was')
  }
})

t.test('a link to nothing where the secret file goes is a configuration error, never a null key', async (t) => {
  // Reading it finds no file, and linking a new one into place finds the name taken: there was
  // once no check after that, and the platform died on a null key with an internal message.
  const dir = tempDir()
  mkdirSync(path.join(dir, 'secrets'))
  const file = path.join(dir, 'secrets', 'example')
  symlinkSync(path.join(dir, 'nowhere'), file)
  t.throws(() => loadSecret(dir, 'example', null), new ConfigError(
    `DATA_DIR: ${JSON.stringify(file)} holds no usable secret (a link to nothing); expected at least 32 characters on one line: delete the file to have a new one generated`,
  ))
  t.equal(readlinkSync(file), path.join(dir, 'nowhere'), 'the link is left as it was')
  t.same(readdirSync(path.join(dir, 'secrets')), ['example'], 'no draft left behind')
})

t.test('a secret file of exactly 32 characters is a secret', async (t) => {
  const dir = tempDir()
  mkdirSync(path.join(dir, 'secrets'))
  writeFileSync(path.join(dir, 'secrets', 'example'), `${'s'.repeat(32)}\n`)
  t.same(loadSecret(dir, 'example', null), ['s'.repeat(32)])
})

t.test('a bridge that starts first creates DATA_DIR 0700 and its ticket secret 0600, as the platform would', async (t) => {
  // npm start runs both at once: whichever comes first makes DATA_DIR, and it must be as private.
  const dataDir = path.join(tempDir(), 'bridge-first')
  const bridge = await startBridge({ DATA_DIR: dataDir, TERMINAL_TICKET_SECRET: undefined })
  t.teardown(() => bridge.stop())
  t.equal(statSync(dataDir).mode & 0o777, 0o700, 'DATA_DIR itself 0700')
  t.equal(statSync(path.join(dataDir, 'secrets')).mode & 0o777, 0o700, 'its secrets folder 0700')
  t.equal(statSync(path.join(dataDir, 'secrets', 'terminal-ticket-secret')).mode & 0o777, 0o600, 'the ticket secret 0600')
})

t.test('an empty ticket or session secret file stops the bridge and the platform: exit 2, one line', async (t) => {
  const dataDir = tempDir()
  mkdirSync(path.join(dataDir, 'secrets'))
  writeFileSync(path.join(dataDir, 'secrets', 'terminal-ticket-secret'), '')
  const line = (name: string): string =>
    `config: DATA_DIR: ${JSON.stringify(path.join(dataDir, 'secrets', name))} holds no usable secret (0 characters); expected at least 32 characters on one line: delete the file to have a new one generated\n`
  const bridge = await startPlatform({ script: BRIDGE_JS, readyEvent: 'bridge.listening', dataDir, env: { TERMINAL_USER: 'nobody', TERMINAL_TICKET_SECRET: undefined } }).then(
    () => new Error('started'),
    (err: Error) => err,
  )
  t.equal(bridge.message, `process exited (2) before ready: ${line('terminal-ticket-secret')}`)
  writeFileSync(path.join(dataDir, 'secrets', 'session-secret'), '')
  const platform = await startPlatform({ dataDir, env: { SESSION_SECRET: undefined, TERMINAL_TICKET_SECRET: undefined } }).then(
    () => new Error('started'),
    (err: Error) => err,
  )
  t.equal(platform.message, `process exited (2) before ready: ${line('session-secret')}`)
})
