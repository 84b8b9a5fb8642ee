import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { accessSync, constants, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import net from 'node:net'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { removeCgroup } from '../../lib/bridge/cgroup.js'
import { relay } from './relay.js'

const RELAY_JS = fileURLToPath(new URL('./relay.js', import.meta.url))

/**
 * This machine's own operating system booted in a systemd-nspawn container, systemd as its PID 1,
 * over a throwaway overlay of `/` (writes land in a tmpfs and vanish with it), with a network of
 * its own (loopback only) and `checkout` mounted read-only at `/opt/playfield`. What the units do
 * under a real systemd (sandboxing, socket activation, restarts, stops) can be seen there, where
 * test/systemd.test.ts can only imitate it.
 */
export interface Container {
  /** Run `script` with bash inside, as root, with a clean environment; never throws. */
  sh(script: string): { status: number | null; stdout: string; stderr: string }
  /** A port on this machine's 127.0.0.1 that reaches `port` on the container's loopback, connecting there from `from`. */
  forward(port: number, from?: string): Promise<number>
  /** Shut the container down and remove its overlay. */
  stop(): Promise<void>
}

/** Why a container cannot be booted here, or null when it can be tried. */
export function containerUnavailable(): string | null {
  if (process.getuid?.() !== 0) return 'needs root (systemd-nspawn, overlay mounts)'
  if (spawnSync('systemd-nspawn', ['--version']).status !== 0) return 'needs systemd-nspawn (Debian package systemd-container)'
  try {
    accessSync('/lib/systemd/systemd', constants.X_OK)
  } catch {
    return 'needs systemd (Debian package systemd)'
  }
  return null
}

const CLEAN_ENV = { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', HOME: '/root', LANG: 'C.UTF-8' }

export async function bootContainer(checkout: string): Promise<Container> {
  // Under /run, a tmpfs of its own: the overlay's upper layer must not lie inside its lower one, `/`.
  mkdirSync('/run/playfield-tests', { recursive: true })
  const dir = mkdtempSync('/run/playfield-tests/container-')
  const mounts: string[] = []
  const mount = (...args: string[]): void => {
    const run = spawnSync('mount', args, { encoding: 'utf8' })
    if (run.status !== 0) throw new Error(`mount ${args.join(' ')}: ${run.stderr}`)
    mounts.unshift(args[args.length - 1]!)
  }
  mount('-t', 'tmpfs', '-o', 'size=2g,mode=0755', 'tmpfs', dir)
  for (const sub of ['upper', 'work', 'root']) mkdirSync(path.join(dir, sub))
  const root = path.join(dir, 'root')
  mount('-t', 'overlay', 'overlay', '-o', `lowerdir=/,upperdir=${dir}/upper,workdir=${dir}/work`, root)
  const name = `pf${process.pid}`
  let output = ''
  // No machined to register with and no systemd on the host to make a scope (--register=no,
  // --keep-unit): the container's systemd then manages a `payload` cgroup under systemd-nspawn's
  // own. So that two containers (two test runs) do not share one, each starts in a cgroup of its
  // own, in the unified hierarchy and in systemd's named one where the machine has both.
  const cgroups = readFileSync('/proc/self/mounts', 'utf8').split('\n').map((line) => line.split(' '))
    .filter(([, , type, options]) => type === 'cgroup2' || (type === 'cgroup' && options!.split(',').includes('name=systemd')))
    .map(([, mountPoint]) => path.join(mountPoint!, `playfield-container.${process.pid}.${path.basename(dir)}`))
  for (const cgroup of cgroups) mkdirSync(cgroup)
  const nspawn: ChildProcess = spawn('sh', ['-c', 'for cgroup in $CGROUPS; do echo $$ >"$cgroup/cgroup.procs"; done; exec systemd-nspawn "$@"', 'sh',
    '--quiet', '-D', root, '-M', name, '--register=no', '--keep-unit', '--link-journal=no', '--private-network',
    `--bind-ro=${checkout}:/opt/playfield`, '--boot',
  ], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...CLEAN_ENV, CGROUPS: cgroups.join(' ') } })
  nspawn.stdout!.on('data', (d: Buffer) => { output += d.toString() })
  nspawn.stderr!.on('data', (d: Buffer) => { output += d.toString() })
  const exited = new Promise<void>((resolve) => nspawn.once('exit', () => resolve()))
  const relays: ChildProcess[] = []
  const servers: net.Server[] = []

  const leader = (): number => {
    const run = spawnSync('pgrep', ['-P', String(nspawn.pid), '-x', 'systemd'], { encoding: 'utf8' })
    return Number(run.stdout.trim().split('\n')[0])
  }
  const enter = (pid: number, args: string[]): string[] => ['-t', String(pid), '-m', '-u', '-i', '-n', '-p', '-C', '--', ...args]
  const sh: Container['sh'] = (script) => {
    // env -i inside as well: tap gives the processes it spawns variables of its own, whatever env they are given.
    const clean = Object.entries(CLEAN_ENV).map(([name, value]) => `${name}=${value}`)
    const run = spawnSync('nsenter', enter(leader(), ['env', '-i', ...clean, 'bash', '-c', script]), { encoding: 'utf8', env: CLEAN_ENV, timeout: 60_000 })
    return { status: run.status, stdout: run.stdout, stderr: run.stderr }
  }

  const stop = async (): Promise<void> => {
    for (const relay of relays) relay.kill('SIGKILL')
    for (const server of servers) server.close()
    if (nspawn.exitCode === null && nspawn.signalCode === null) {
      nspawn.kill('SIGTERM') // systemd-nspawn asks the container's systemd to power off
      await Promise.race([exited, sleep(30_000)])
      if (nspawn.exitCode === null && nspawn.signalCode === null) {
        nspawn.kill('SIGKILL')
        await exited
      }
    }
    for (const target of mounts) spawnSync('umount', ['-l', target])
    rmSync(dir, { recursive: true, force: true })
    for (const cgroup of cgroups) removeCgroup(cgroup)
  }

  try {
    // Booted: systemd answers and has finished starting up (running, or degraded if some unit of
    // this machine's own failed, which is not ours to judge).
    const deadline = Date.now() + 60_000
    for (;;) {
      if (nspawn.exitCode !== null || nspawn.signalCode !== null) throw new Error(`systemd-nspawn exited:\n${output}`)
      if (leader() > 0) {
        const state = sh('systemctl is-system-running').stdout.trim()
        if (state === 'running' || state === 'degraded') break
      }
      if (Date.now() > deadline) throw new Error(`the container did not finish booting in 60 s:\n${output}`)
      await sleep(200)
    }
  } catch (error) {
    await stop()
    throw error
  }

  const forward: Container['forward'] = async (port, from = '127.0.0.1') => {
    // A Unix socket crosses network namespaces: a relay in the container's network (and nothing
    // else of it) listens on one, and a server here on 127.0.0.1 pipes each connection to it.
    const socketPath = path.join(dir, `port-${port}-${from}.sock`)
    const target = { port, host: '127.0.0.1', localAddress: from }
    const inside = spawn('nsenter', ['-t', String(leader()), '-n', '--', process.execPath, RELAY_JS, JSON.stringify({ path: socketPath }), JSON.stringify(target)],
      { stdio: ['ignore', 'pipe', 'inherit'], env: CLEAN_ENV })
    relays.push(inside)
    await new Promise<void>((resolve, reject) => {
      inside.stdout!.once('data', () => resolve())
      inside.once('exit', (code) => reject(new Error(`the relay to port ${port} exited ${code}`)))
    })
    const server = await relay({ port: 0, host: '127.0.0.1' }, { path: socketPath })
    servers.push(server)
    return (server.address() as net.AddressInfo).port
  }

  return { sh, forward, stop }
}
