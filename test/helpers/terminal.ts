import { execFileSync } from 'node:child_process'
import { setTimeout as sleep } from 'node:timers/promises'
import { accessSync, constants, readFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import type { IncomingMessage } from 'node:http'
import { WebSocket } from 'ws'
import { mintTicket } from '../../lib/ticket.js'
import { BRIDGE_JS, Client, startPlatform, type RunningProcess, type StartOptions } from './platform.js'

/** The unprivileged account shells run as in tests (CI runs as root; .ci/run creates it too). */
export const SHELL_USER = 'playfield-shell'
export const TICKET_SECRET = 'test-ticket-secret-0123456789abcdef-0123456789'
export const ORIGIN = 'http://127.0.0.1:3000'

/** Create the shell account when the tests run as root and it is missing. */
export function ensureShellUser(): void {
  if (process.getuid?.() !== 0) return
  try {
    execFileSync('id', ['-u', SHELL_USER], { stdio: 'ignore' })
  } catch {
    execFileSync('useradd', ['--create-home', '--shell', '/bin/bash', SHELL_USER], { stdio: 'ignore' })
  }
}

/** An account's uid and gid, from `id`. */
export const uidOf = (name: string): number => Number(execFileSync('id', ['-u', name], { encoding: 'utf8' }))
export const gidOf = (name: string): number => Number(execFileSync('id', ['-g', name], { encoding: 'utf8' }))

/**
 * Where a root bridge started by a test would make its cgroups (lib/bridge/containment.ts),
 * found without the bridge's code, or why it could not: the cgroup v2 mount, and this process's
 * cgroup in it, which its children start in.
 */
export function cgroupHierarchy(): { own: string; path: string } | { why: string } {
  if (process.getuid?.() !== 0) return { why: 'needs root' }
  const [major, minor] = os.release().split('.').map(Number)
  if (major! < 5 || (major === 5 && minor! < 14)) return { why: `needs Linux 5.14 for cgroup.kill (${os.release()})` }
  const mount = readFileSync('/proc/self/mountinfo', 'utf8').split('\n').map((l) => l.split(' - ')).find(([, right]) => right?.startsWith('cgroup2 '))
  const fields = mount?.[0]!.split(' ')
  if (!fields || fields[3] !== '/') return { why: 'needs a cgroup v2 hierarchy' }
  const own = readFileSync('/proc/self/cgroup', 'utf8').split('\n').find((l) => l.startsWith('0::'))?.slice(3)
  if (own === undefined) return { why: 'needs a cgroup v2 hierarchy' }
  const dir = path.join(fields[4]!, own)
  try {
    accessSync(dir, constants.W_OK)
  } catch {
    return { why: `needs a writable cgroup v2 hierarchy (${dir})` }
  }
  return { own, path: dir }
}

/** Remove a cgroup and those under it, deepest first; false while one still holds a process (the bridge's own removal). */
export { removeCgroup as removeCgroupTree } from '../../lib/bridge/cgroup.js'

/** Start the real bridge on an ephemeral port (run by `wrapper` when given; on a passed `socket`, StartOptions.socket). */
export function startBridge(env: Record<string, string | undefined> = {}, wrapper: string[] = [], socket?: StartOptions['socket']): Promise<RunningProcess> {
  ensureShellUser()
  return startPlatform({
    script: BRIDGE_JS,
    wrapper,
    socket,
    readyEvent: 'bridge.listening',
    // NODE_OPTIONS: the V8 flag bin/terminal-bridge runs the bridge with. No access checks: a
    // bridge under test has no platform of its own, and another test's may listen on port 3000.
    env: { NODE_OPTIONS: '--max-semi-space-size=2', TERMINAL_PORT: '0', TERMINAL_USER: SHELL_USER, TERMINAL_TICKET_SECRET: TICKET_SECRET, PLATFORM_ORIGINS: ORIGIN, TERMINAL_ACCESS_CHECK_S: '0', ...env },
  })
}

/**
 * The wrapper for a root bridge that can start no shell: once it is TERMINAL_USER, no process of
 * its may fork (RLIMIT_NPROC 0; root, as which it starts, is exempt).
 */
export const NO_FORKS = ['prlimit', '--nproc=0:']

/**
 * Pace a client's reading of its socket to `bytesPerSecond` of what `read()` counts, from now, as
 * a slow link would: the returned function, called after each frame, stops reading until the
 * budget catches up.
 */
export function paceReading(ws: WebSocket, bytesPerSecond: number, read: () => number): () => void {
  const started = Date.now()
  let waiting = false
  return () => {
    const ahead = (read() / bytesPerSecond) * 1000 - (Date.now() - started)
    if (ahead > 0 && !waiting) {
      waiting = true
      ws.pause()
      setTimeout(() => {
        waiting = false
        ws.resume()
      }, ahead)
    }
  }
}

/**
 * Make `c` read its output at `bytesPerSecond` (characters), counting it without keeping it (a
 * flood does not fit in a test string); other frames are dropped. The count is `chars`.
 */
export function readPaced(c: TermClient, bytesPerSecond: number): { chars: number } {
  const counter = { chars: 0 }
  const pace = paceReading(c.ws, bytesPerSecond, () => counter.chars)
  c.ws.removeAllListeners('message')
  c.ws.on('message', (data) => {
    const frame = JSON.parse(data.toString()) as { type: string; data?: string }
    if (frame.type === 'output') counter.chars += frame.data!.length
    pace()
  })
  return counter
}

/** A fresh ticket for a test user. */
export function ticket(now = Date.now(), user = { id: 'u-1', username: 'dev' }): string {
  return mintTicket([TICKET_SECRET], user, 'a-session', now).ticket
}

export interface Frame {
  type: string
  [key: string]: unknown
}

/** A WebSocket terminal client that records every frame and the close. */
export class TermClient {
  readonly frames: Frame[] = []
  output = ''
  closed: { code: number; reason: string } | null = null
  readonly opened: Promise<void>
  readonly #waiters = new Set<() => void>()

  constructor(readonly ws: WebSocket) {
    this.opened = new Promise((resolve, reject) => {
      ws.once('open', () => resolve())
      ws.once('error', reject)
      ws.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)))
    })
    ws.on('message', (data) => {
      const frame = JSON.parse(data.toString()) as Frame
      this.frames.push(frame)
      if (frame.type === 'output') this.output += frame.data as string
      this.wake()
    })
    ws.on('close', (code, reason) => {
      this.closed = { code, reason: reason.toString() }
      this.wake()
    })
  }

  /** Re-check every pending until() (for callers that consume frames themselves). */
  wake(): void {
    for (const waiter of this.#waiters) waiter()
  }

  send(frame: unknown): void {
    this.ws.send(typeof frame === 'string' ? frame : JSON.stringify(frame))
  }

  /** Resolve when `test()` holds (checked after every frame), reject after `ms`. */
  until(test: () => boolean, ms = 10_000, what = 'condition'): Promise<void> {
    if (test()) return Promise.resolve()
    return new Promise((resolve, reject) => {
      const check = (): void => {
        if (!test()) return
        clearTimeout(timer)
        this.#waiters.delete(check)
        resolve()
      }
      const timer = setTimeout(() => {
        this.#waiters.delete(check)
        reject(new Error(`timed out waiting for ${what}; output tail: ${JSON.stringify(this.output.slice(-300))}`))
      }, ms)
      this.#waiters.add(check)
    })
  }

  /** The next frame of `type` after index `from`. */
  async frame(type: string, from = 0, ms?: number): Promise<Frame> {
    // Each look goes on from where the last one stopped: a wait behind 100,000 frames stays linear.
    let at = from
    const found = (): boolean => {
      for (; at < this.frames.length; at++) if (this.frames[at]!.type === type) return true
      return false
    }
    await this.until(found, ms, `a ${type} frame`)
    return this.frames[at]!
  }

  /** Run a command and return what it printed (between two markers the shell echoes around it). */
  async run(command: string, ms?: number): Promise<string> {
    const id = Math.random().toString(36).slice(2)
    const begin = `<<B${id}>>`
    const end = `<<E${id}>>`
    const start = this.output.length
    // The quotes keep the echoed command line from matching the markers.
    this.send({ type: 'input', data: `echo '<<B'${id}'>>'; ${command}; echo '<<E'${id}'>>'\r` })
    await this.until(() => this.output.indexOf(end, start) >= 0, ms, `output of ${command}`)
    const from = this.output.indexOf(begin, start) + begin.length
    return this.output.slice(from, this.output.indexOf(end, start)).replace(/^\r?\n/, '')
  }

  whenClosed(ms?: number): Promise<{ code: number; reason: string }> {
    return this.until(() => this.closed !== null, ms, 'close').then(() => this.closed!)
  }
}

/** Open a terminal WebSocket at the bridge. */
export async function connect(port: number, options: { ticket?: string; origin?: string; path?: string } = {}): Promise<TermClient> {
  const query = options.ticket === undefined ? `?ticket=${encodeURIComponent(ticket())}` : options.ticket === '' ? '' : `?ticket=${encodeURIComponent(options.ticket)}`
  const ws = new WebSocket(`ws://127.0.0.1:${port}${options.path ?? '/ws'}${query}`, { origin: options.origin ?? ORIGIN })
  const client = new TermClient(ws)
  await client.opened
  return client
}

/** The HTTP status an upgrade attempt is refused with, or 101. */
export async function upgradeStatus(port: number, path: string, origin: string | undefined): Promise<number> {
  return (await upgradeAnswer(port, path, origin)).status
}

/** The status of a WebSocket upgrade and the X-Request-Id its answer carries, if any. */
export function upgradeAnswer(port: number, path: string, origin: string | undefined): Promise<{ status: number; requestId: string | undefined }> {
  return new Promise((resolve) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}${path}`, origin === undefined ? {} : { origin })
    const requestId = (res: IncomingMessage): string | undefined => res.headers['x-request-id'] as string | undefined
    ws.once('unexpected-response', (_req, res) => {
      resolve({ status: res.statusCode ?? 0, requestId: requestId(res) })
      ws.terminate()
    })
    ws.once('upgrade', (res) => resolve({ status: 101, requestId: requestId(res) }))
    ws.once('open', () => ws.close())
    ws.once('error', () => undefined)
  })
}

/** A client's masked text frame (RFC 6455 §5.3) of under 126 bytes, for a raw socket. */
export function maskedText(text: string): Buffer {
  const payload = Buffer.from(text)
  if (payload.length >= 126) throw new Error('maskedText: a short frame only')
  const mask = Buffer.from([1, 2, 3, 4])
  const masked = payload.map((b, i) => b ^ mask[i % 4]!)
  return Buffer.concat([Buffer.from([0x81, 0x80 | payload.length]), mask, masked])
}

/** Poll `test` every 50 ms until it holds (a TermClient's own `until` looks only when a frame comes). */
export async function until(test: () => boolean | Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms
  while (!(await test())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(50)
  }
}

/** Whether a process runs: it is in /proc and not a zombie (signal 0 would count a zombie). */
export function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat[stat.lastIndexOf(')') + 2] !== 'Z'
  } catch {
    return false
  }
}

/** A client signed in to the platform at `base` as `name`, registered first unless `register` is false. */
export async function signInAt(base: string, name: string, register = true): Promise<Client> {
  const client = new Client(base, ORIGIN)
  const res = await client.post(register ? '/api/auth/register' : '/api/auth/login', { username: name, password: 'correct horse battery' })
  if (res.status !== 200) throw new Error(`sign-in ${name}: ${res.status} ${await res.text()}`)
  return client
}

/** A developer's terminal on the bridge at `bridgePort`, opened with a ticket `client` got from the platform, its shell running. */
export async function openTerminalAt(bridgePort: number, client: Client): Promise<{ term: TermClient; pid: number }> {
  const { ticket } = (await (await client.post('/dev/terminal/ticket')).json()) as { ticket: string }
  const term = await connect(bridgePort, { ticket })
  term.send({ type: 'create' })
  const pid = (await term.frame('created')).pid as number
  return { term, pid }
}
