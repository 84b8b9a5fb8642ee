import t from 'tap'
import { execFileSync, execSync, spawnSync } from 'node:child_process'
import { accessSync, chownSync, constants, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { PLATFORM_JS, ROOT, tempDir, startPlatform } from './helpers/platform.js'
import { request } from './helpers/nginx.js'
import {
  INSTALL_DIR, exposure, localUnitText, parseUnit, timeSpanMs, unitEnvironment, unitText, verifyUnit,
} from './helpers/units.js'

const UNITS = ['playfield.service', 'playfield-terminal.service'] as const
const platformUnit = parseUnit(unitText('playfield.service'))
const terminalUnit = parseUnit(unitText('playfield-terminal.service'))

/** The single value of `key` in [Service]. */
function service(unit: typeof platformUnit, key: string): string | undefined {
  const values = unit.Service?.[key]
  return values?.[values.length - 1]
}

for (const name of UNITS) {
  t.test(`systemd-analyze verify accepts ${name} with no warning`, async (t) => {
    // The unit names /opt/playfield; verify checks that ExecStart exists, so the copy checked
    // here points at this checkout instead. Nothing else is changed.
    const dir = tempDir('playfield-units-')
    const { status, stderr } = verifyUnit(dir, name, localUnitText(name))
    t.equal(stderr, '', 'no warnings')
    t.equal(status, 0)
  })

  t.test(`${name}: ExecStart is a bin/ executable of the checkout and other paths agree`, async (t) => {
    const unit = parseUnit(unitText(name))
    const execStart = service(unit, 'ExecStart')!
    t.match(execStart, new RegExp(`^${INSTALL_DIR}/bin/`))
    const local = execStart.replace(INSTALL_DIR, ROOT)
    t.doesNotThrow(() => accessSync(local, constants.X_OK), `${local} is executable`)
    t.equal(service(unit, 'Restart'), 'on-failure')
    t.same(unit.Service!.EnvironmentFile!.slice(0, 1), ['/etc/playfield/playfield.env'], 'the shared environment file, required')
    t.equal(service(unit, 'Type'), 'exec')
    t.ok(service(unit, 'SyslogIdentifier'), 'journal lines carry a name')
  })

  t.test(`${name} is hardened`, async (t) => {
    const unit = parseUnit(unitText(name))
    const expect: Record<string, string> = {
      NoNewPrivileges: 'yes',
      CapabilityBoundingSet: '',
      AmbientCapabilities: '',
      ProtectSystem: 'strict',
      ProtectHome: 'yes',
      PrivateTmp: 'yes',
      PrivateDevices: 'yes',
      ProtectKernelTunables: 'yes',
      ProtectKernelModules: 'yes',
      ProtectKernelLogs: 'yes',
      ProtectControlGroups: 'yes',
      RestrictNamespaces: 'yes',
      RestrictRealtime: 'yes',
      RestrictSUIDSGID: 'yes',
      LockPersonality: 'yes',
      SystemCallArchitectures: 'native',
      UMask: '0077',
    }
    for (const [key, value] of Object.entries(expect)) t.equal(service(unit, key), value, `${key}=${value}`)
    t.equal(unit.Service!.SystemCallFilter![0], '@system-service')
    t.equal(service(unit, 'MemoryDenyWriteExecute'), undefined, 'not set: the V8 JIT needs W+X memory')
    t.notMatch(service(unit, 'User'), /^(root|0)?$/, 'never root')
  })
}

t.test('playfield.service: system account, writable DATA_DIR only, reload by SIGHUP, stop after the grace', async (t) => {
  t.equal(service(platformUnit, 'User'), 'playfield')
  const env = unitEnvironment(platformUnit)
  t.equal(env.DATA_DIR, '/var/lib/playfield')
  t.equal(service(platformUnit, 'StateDirectory'), 'playfield', 'systemd creates DATA_DIR for the account')
  t.equal(service(platformUnit, 'ReadWritePaths'), env.DATA_DIR)
  t.equal(service(platformUnit, 'ExecReload'), '/bin/kill -HUP $MAINPID')
  t.match(platformUnit.Service!.SystemCallFilter, ['@system-service', '~@privileged @resources'])
  t.equal(service(platformUnit, 'IPAddressDeny'), 'any')
  // bin/platform.ts allows in-flight requests 9 s after SIGTERM; systemd must wait longer.
  const grace = Number(/SHUTDOWN_GRACE_MS = ([\d_]+)/.exec(readFileSync(`${ROOT}/bin/platform.ts`, 'utf8'))![1]!.replace(/_/g, ''))
  t.ok(timeSpanMs(service(platformUnit, 'TimeoutStopSec')!) > grace, 'TimeoutStopSec above the shutdown grace')
})

t.test('playfield-terminal.service: runs as the shell account, ends its shells itself', async (t) => {
  t.equal(service(terminalUnit, 'User'), 'playfield-shell')
  t.notOk('TERMINAL_USER' in unitEnvironment(terminalUnit), 'a non-root bridge runs shells as itself')
  t.equal(unitEnvironment(terminalUnit).SHELL, '/bin/bash', 'not the account\'s nologin')
  t.equal(service(terminalUnit, 'KillMode'), 'mixed')
  // The bridge exits within 5 s of SIGTERM (CONTRACT section 6).
  t.ok(timeSpanMs(service(terminalUnit, 'TimeoutStopSec')!) > 5000)
  t.equal(service(terminalUnit, 'StateDirectory'), 'playfield-shell', 'the shell account\'s writable home')
  t.equal(service(terminalUnit, 'WorkingDirectory'), '/var/lib/playfield-shell')
})

t.test('systemd-analyze security: exposure of each unit', async (t) => {
  const dir = tempDir('playfield-units-')
  const limits: Record<string, number> = { 'playfield.service': 1.5, 'playfield-terminal.service': 2.0 }
  for (const name of UNITS) {
    const file = path.join(dir, name)
    writeFileSync(file, localUnitText(name))
    const level = exposure(file)
    t.comment(`${name}: overall exposure ${level}`)
    t.ok(level <= limits[name]!, `${name} exposure ${level} <= ${limits[name]}`)
  }
})

// Run the platform the way its unit does, as far as a test can without systemd: the ExecStart
// wrapper from WorkingDirectory, the unit's Environment=, umask 0077, no new privileges, no
// capabilities, and (when the test runs as root) as an unprivileged account.
t.test('the platform runs as its unit starts it, reloads on ExecReload and stops within TimeoutStopSec', async (t) => {
  // As root, switch to nobody, unless the checkout is out of nobody's reach (a clone under
  // /root): then the process keeps uid 0 but still loses every capability.
  const root = process.getuid?.() === 0
  const nobody = root ? Number(execFileSync('id', ['-u', 'nobody'], { encoding: 'utf8' })) : -1
  const nogroup = root ? Number(execFileSync('id', ['-g', 'nobody'], { encoding: 'utf8' })) : -1
  const asNobody = ['--reuid', String(nobody), '--regid', String(nogroup), '--clear-groups']
  const reachable = root && spawnSync('setpriv', [...asNobody, 'test', '-r', PLATFORM_JS]).status === 0
  if (root && !reachable) t.comment(`${ROOT} is not readable by nobody: running as uid 0 without capabilities`)
  const dataDir = tempDir('playfield-unit-data-')
  if (reachable) chownSync(dataDir, nobody, nogroup)
  const drop = [
    ...(reachable ? asNobody : []),
    ...(root ? ['--bounding-set=-all', '--inh-caps=-all'] : []),
  ]
  const execStart = service(platformUnit, 'ExecStart')!.replace(INSTALL_DIR, ROOT)
  const env = unitEnvironment(platformUnit)
  const platform = await startPlatform({
    command: ['/bin/sh', '-c', `umask ${service(platformUnit, 'UMask')} && exec "$@"`, 'sh', 'setpriv', '--no-new-privs', ...drop, '--', execStart],
    cwd: service(platformUnit, 'WorkingDirectory')!.replace(INSTALL_DIR, ROOT),
    dataDir,
    env: { ...env, DATA_DIR: dataDir, MANIFESTS_DIR: env.MANIFESTS_DIR!.replace(INSTALL_DIR, ROOT), HOME: '/nonexistent' },
  })
  t.teardown(() => platform.stop('SIGKILL'))
  const status = readFileSync(`/proc/${platform.child.pid}/status`, 'utf8')
  t.match(status, /NoNewPrivs:\s+1/)
  if (reachable) t.match(status, new RegExp(`\\nUid:\\s+${nobody}\\s`), 'runs as an unprivileged account')
  if (root) t.match(status, /CapBnd:\s+0+\n/, 'no capabilities')

  const guest = await request('POST', `${platform.url}/api/auth/guest`)
  t.equal(guest.status, 200, 'signs in a guest: DATA_DIR is writable')
  const created = readdirSync(dataDir, { recursive: true, withFileTypes: true })
  t.ok(created.some((e) => e.name === 'playfield.sqlite'), 'the database lives in DATA_DIR')
  for (const entry of created) {
    const mode = statSync(path.join(entry.parentPath, entry.name)).mode & 0o777
    t.equal(mode & 0o077, 0, `${entry.name} (${mode.toString(8)}) is private to the account`)
  }

  const reload = service(platformUnit, 'ExecReload')!.replace('$MAINPID', String(platform.child.pid))
  execSync(reload)
  for (let i = 0; i < 100 && !platform.logs.some((l) => l.event === 'catalogue.reloaded'); i++) await new Promise((r) => setTimeout(r, 20))
  t.ok(platform.logs.some((l) => l.event === 'catalogue.reloaded'), 'ExecReload reloads the catalogue')
  t.equal((await request('GET', `${platform.url}/api/games`)).status, 200, 'still serving after the reload')

  const limit = timeSpanMs(service(platformUnit, 'TimeoutStopSec')!)
  const stopped = await Promise.race([
    platform.stop(service(platformUnit, 'KillSignal') as NodeJS.Signals),
    new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), limit).unref()),
  ])
  t.same(stopped, { code: 0, signal: null }, 'exits 0 on SIGTERM before systemd would SIGKILL')
})
