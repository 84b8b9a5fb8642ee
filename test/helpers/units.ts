import { execFileSync, spawnSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { ROOT } from './platform.js'

/** Where the units expect the checkout (README "Deploy"). */
export const INSTALL_DIR = '/opt/playfield'

/** A unit file's settings: section -> key -> every value in order (systemd keys may repeat). */
export type Unit = Record<string, Record<string, string[]>>

/** The shipped unit `name` from systemd/, as text. */
export function unitText(name: string): string {
  return readFileSync(path.join(ROOT, 'systemd', name), 'utf8')
}

/** Parse unit-file text (no line continuations are used in ours). */
export function parseUnit(text: string): Unit {
  const unit: Unit = {}
  let section: Record<string, string[]> | undefined
  for (const raw of text.split('\n')) {
    const line = raw.trim()
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue
    const header = /^\[(.+)\]$/.exec(line)
    if (header) {
      section = unit[header[1]!] ??= {}
      continue
    }
    const eq = line.indexOf('=')
    if (!section || eq < 0) throw new Error(`unit line outside a section or without "=": ${line}`)
    ;(section[line.slice(0, eq)] ??= []).push(line.slice(eq + 1))
  }
  return unit
}

/** The unit's text with the install directory pointed at this checkout: what a test can run. */
export function localUnitText(name: string): string {
  return unitText(name).replaceAll(INSTALL_DIR, ROOT)
}

/** `Environment=` assignments of a [Service] section as a map. */
export function unitEnvironment(unit: Unit): Record<string, string> {
  const env: Record<string, string> = {}
  for (const assignment of unit.Service?.Environment ?? []) {
    for (const pair of assignment.split(/\s+/)) {
      const eq = pair.indexOf('=')
      env[pair.slice(0, eq)] = pair.slice(eq + 1)
    }
  }
  return env
}

/** Parse a systemd time span such as `15s`, `2min` or `500ms` into milliseconds. */
export function timeSpanMs(value: string): number {
  const m = /^(\d+)\s*(ms|s|sec|min|m)?$/.exec(value.trim())
  if (!m) throw new Error(`unsupported time span ${value}`)
  const n = Number(m[1])
  return m[2] === 'ms' ? n : m[2] === 'min' || m[2] === 'm' ? n * 60_000 : n * 1000
}

/** Run `systemd-analyze verify` on `text` saved as `dir/name`; returns exit status and stderr. */
export function verifyUnit(dir: string, name: string, text: string): { status: number | null; stderr: string } {
  const file = path.join(dir, name)
  writeFileSync(file, text)
  const run = spawnSync('systemd-analyze', ['verify', file], { encoding: 'utf8' })
  return { status: run.status, stderr: run.stderr }
}

/** `systemd-analyze security --offline` of the unit file at `file`: the overall exposure (0-10). */
export function exposure(file: string): number {
  const out = execFileSync('systemd-analyze', ['security', '--offline=true', '--no-pager', file], { encoding: 'utf8' })
  const m = /Overall exposure level for \S+: (\d+(?:\.\d+)?)/.exec(out)
  if (!m) throw new Error(`no exposure level in:\n${out}`)
  return Number(m[1])
}

/** The last value of `key` in the unit's [Service] section. */
export function serviceValue(unit: Unit, key: string): string | undefined {
  const values = unit.Service?.[key]
  return values?.[values.length - 1]
}

export interface UnitLaunch {
  /** For startPlatform's `command`: umask, then setpriv dropping what the unit drops, then ExecStart. */
  command: string[]
  cwd: string
  /** The unit's Environment=, with paths moved. */
  env: Record<string, string>
  /** True when the process starts as the unit starts it: as `account`, or as root for a unit without User=. */
  asAccount: boolean
}

/** A unit's CapabilityBoundingSet= ("CAP_SETUID CAP_SETGID", or empty) as setpriv's --bounding-set. */
function boundingSet(unit: Unit): string {
  const caps = (serviceValue(unit, 'CapabilityBoundingSet') ?? '').split(/\s+/).filter(Boolean)
  return ['-all', ...caps.map((c) => `+${c.replace(/^CAP_/, '').toLowerCase()}`)].join(',')
}

/**
 * Start a unit's ExecStart as far as a test can without systemd: from its WorkingDirectory, with
 * its Environment= and UMask=, no new privileges and, as root, only the capabilities of its
 * CapabilityBoundingSet=. A unit with User= runs as `account` (standing in for that user), unless
 * the checkout is out of that account's reach (a clone under /root), when it keeps uid 0 without
 * capabilities; a unit without User= starts as root. `/opt/playfield` becomes the checkout; `moved`
 * maps other absolute paths of the unit to test ones.
 */
export function unitLaunch(unit: Unit, account: string, moved: Record<string, string> = {}): UnitLaunch {
  const move = (value: string): string => {
    let out = value.replaceAll(INSTALL_DIR, ROOT)
    for (const [from, to] of Object.entries(moved)) out = out.replaceAll(from, to)
    return out
  }
  const root = process.getuid?.() === 0
  const switches = root && serviceValue(unit, 'User') !== undefined
  const asUser = switches ? ['--reuid', account, '--regid', execFileSync('id', ['-g', account], { encoding: 'utf8' }).trim(), '--init-groups'] : []
  const execStart = move(serviceValue(unit, 'ExecStart')!)
  const reachable = !switches || (spawnSync('setpriv', [...asUser, 'test', '-x', execStart]).status === 0 &&
    spawnSync('setpriv', [...asUser, 'test', '-r', path.join(ROOT, 'dist/bin/platform.js')]).status === 0)
  const asAccount = root && reachable
  const drop = [...(switches && reachable ? asUser : []), ...(root ? [`--bounding-set=${boundingSet(unit)}`, '--inh-caps=-all'] : [])]
  const env = Object.fromEntries(Object.entries(unitEnvironment(unit)).map(([k, v]) => [k, move(v)]))
  return {
    // NODE_OPTIONS goes: tap adds its process-info hooks to every child, and they would write
    // into the checkout's .tap/ as the unit's account; the unit's environment has no such thing.
    command: ['/bin/sh', '-c', `umask ${serviceValue(unit, 'UMask')} && unset NODE_OPTIONS && exec "$@"`, 'sh', 'setpriv', '--no-new-privs', ...drop, '--', execStart],
    cwd: move(serviceValue(unit, 'WorkingDirectory')!),
    env,
    asAccount,
  }
}

/** The home directory of `user` from /etc/passwd. */
export function homeOf(user: string): string {
  const line = readFileSync('/etc/passwd', 'utf8').split('\n').find((l) => l.startsWith(`${user}:`))
  if (!line) throw new Error(`no account ${user}`)
  return line.split(':')[5]!
}
