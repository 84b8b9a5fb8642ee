import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

/** The repository root (tests run from dist/test/...). */
export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..')
export const PLATFORM_JS = path.join(ROOT, 'dist/bin/platform.js')
export const BRIDGE_JS = path.join(ROOT, 'dist/bin/terminal-bridge.js')

/**
 * Run `bin/platform users …` as a child with `env` (DATA_DIR and what the backend needs) over a
 * bare PATH; resolves with its exit code and both streams. Asynchronous on purpose: while a
 * synchronous child ran (seconds on a loaded machine), fetch could not see a server close its
 * kept-alive sockets, and the next request went out on one of them ("other side closed").
 */
export function runUsers(env: Record<string, string | undefined>, ...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return runPlatformCommand(env, 'users', ...args)
}

/** Any `bin/platform` sub-command (`check`, `users …`), as runUsers runs `users`. */
export function runPlatformCommand(env: Record<string, string | undefined>, ...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [PLATFORM_JS, ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, MANIFESTS_DIR: path.join(ROOT, 'manifests'), ...env },
  })
  let stdout = ''
  let stderr = ''
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d))
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d))
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })))
}

/** runUsers for a step a test builds on (a grant, a revoke): throws when the command fails. */
export async function runUsersOk(env: Record<string, string | undefined>, ...args: string[]): Promise<void> {
  const { code, stderr } = await runUsers(env, ...args)
  if (code !== 0) throw new Error(`bin/platform users ${args.join(' ')}: exit ${code}: ${stderr}`)
}

/** A TCP port free on loopback right now (the OS picks it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo
      server.close(() => resolve(port))
    })
  })
}

/** Pids whose parent is `pid` (Linux /proc); none once it is gone. */
export function childPids(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number)
  } catch {
    return []
  }
}

/** A fresh temporary directory, removed when the process exits. */
export function tempDir(prefix = 'playfield-test-'): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix))
  if (tempDirs.size === 0) process.once('exit', removeTempDirs)
  tempDirs.add(dir)
  return dir
}

// One exit listener for every directory (a listener each tripped Node's leak warning).
const tempDirs = new Set<string>()

function removeTempDirs(): void {
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true })
}

export interface RunningProcess {
  child: ChildProcess
  /** Base URL, e.g. http://127.0.0.1:41234 */
  url: string
  port: number
  /** Every stdout line parsed as JSON (non-JSON lines kept as {raw}). */
  logs: Record<string, unknown>[]
  stderr: () => string
  /** Send a signal and wait for exit; resolves with the exit code and signal. */
  stop(signal?: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
}

export interface StartOptions {
  env?: Record<string, string | undefined>
  /** DATA_DIR; a fresh temporary one when omitted. */
  dataDir?: string
  args?: string[]
  /** The log event that says the process is ready and carries `port`. */
  readyEvent?: string
  script?: string
  /** Run this program and arguments instead of node `script` (e.g. a bin/ wrapper under setpriv). */
  command?: string[]
  /** A program that runs the command (e.g. `prlimit --nproc=0:`). */
  wrapper?: string[]
  /** Working directory; the repository root when omitted. */
  cwd?: string
  /**
   * Run under `systemd-socket-activate`, which listens on `address` and passes that socket as
   * systemd passes a .socket unit's (LISTEN_FDS), with the whole environment; it starts the
   * process at the first connection. `starts` runs the command that many times in turn on the one
   * socket, each after the last has exited, as the unit's Restart= would; the child is then the
   * shell that runs them, and the one running is its child.
   */
  socket?: { address: string; starts?: number }
}

/**
 * The bridge, run through sh with the caller's NODE_OPTIONS only. tap adds its process-info hooks
 * to every child's NODE_OPTIONS, and they write into the checkout's .tap/ when the process exits:
 * a root bridge is TERMINAL_USER by then, and their EACCES would end up on its stderr.
 */
function bridgeCommand(env: Record<string, string | undefined>, args: string[] = []): string[] {
  env.PLAYFIELD_NODE_OPTIONS = env.NODE_OPTIONS ?? ''
  const script = 'NODE_OPTIONS=$PLAYFIELD_NODE_OPTIONS; unset PLAYFIELD_NODE_OPTIONS; if [ -n "$NODE_OPTIONS" ]; then export NODE_OPTIONS; else unset NODE_OPTIONS; fi; exec "$@"'
  return ['/bin/sh', '-c', script, 'sh', process.execPath, BRIDGE_JS, ...args]
}

/**
 * Start the real platform (or bridge, with `script`) as a child on an ephemeral port, and resolve
 * once it logs its ready event. The backend follows TEST_BACKEND (embedded unless set).
 */
export async function startPlatform(options: StartOptions = {}): Promise<RunningProcess> {
  const dataDir = options.dataDir ?? tempDir()
  const backendEnv = await testBackendFor(dataDir)
  const env: Record<string, string | undefined> = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    PORT: '0',
    DATA_DIR: dataDir,
    MANIFESTS_DIR: path.join(ROOT, 'manifests'),
    ...backendEnv,
    ...options.env,
  }
  for (const key of Object.keys(env)) if (env[key] === undefined) delete env[key]
  const command = options.command ?? (options.script === BRIDGE_JS ? bridgeCommand(env, options.args) : [process.execPath, options.script ?? PLATFORM_JS, ...(options.args ?? [])])
  const [file, ...argv] = [...(options.socket ? socketActivation(options.socket, Object.keys(env)) : []), ...(options.wrapper ?? []), ...command]
  const child = spawn(file!, argv, {
    env: env as NodeJS.ProcessEnv,
    cwd: options.cwd ?? ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const logs: Record<string, unknown>[] = []
  let err = ''
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d))
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  )
  const readyEvent = options.readyEvent ?? 'platform.listening'
  return new Promise((resolve, reject) => {
    let buffer = ''
    child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      buffer += d
      let nl: number
      while ((nl = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, nl)
        buffer = buffer.slice(nl + 1)
        let entry: Record<string, unknown>
        try {
          entry = JSON.parse(line)
        } catch {
          entry = { raw: line }
        }
        logs.push(entry)
        if (entry.event === readyEvent) {
          const port = Number(entry.port)
          resolve({
            child,
            port,
            url: `http://127.0.0.1:${port}`,
            logs,
            stderr: () => err,
            exited,
            async stop(signal = 'SIGTERM') {
              if (child.exitCode === null && child.signalCode === null) child.kill(signal)
              return exited
            },
          })
        }
      }
    })
    void exited.then(({ code, signal }) => reject(new Error(`process exited (${code ?? signal}) before ready: ${err}`)))
  })
}

/**
 * The wrapper for StartOptions.socket. Each start is a process of its own (sh's `$$`, kept by
 * exec), so LISTEN_PID names it, as systemd sets it for each start of a service.
 */
function socketActivation({ address, starts = 1 }: { address: string; starts?: number }, names: string[]): string[] {
  const activate = ['systemd-socket-activate', '--listen', address, ...names.flatMap((name) => ['--setenv', name])]
  // One start: the command is the process systemd-socket-activate became (the child's pid).
  if (starts === 1) return activate
  const each = `for n in $(seq ${starts}); do /bin/sh -c 'LISTEN_PID=$$; export LISTEN_PID; exec "$@"' sh "$@"; done`
  return [...activate, '/bin/sh', '-c', each, 'sh']
}

/**
 * The error of a start that must fail (`process exited (N) before ready: …`), or Error('started')
 * once a start that did not fail has been killed: a regression then fails its test rather than
 * leaving a server running.
 */
export function startRefused(options: StartOptions = {}): Promise<Error> {
  return startPlatform(options).then(async (started) => (await started.stop('SIGKILL'), new Error('started')), (err: Error) => err)
}

/**
 * `starting` (a start that should fail, awaited later: a test knocks on its socket meanwhile), with
 * a teardown on `t` that kills the process should it start after all, so the file fails, not hangs.
 */
export function killedAtEnd(t: { teardown(fn: () => unknown): void }, starting: Promise<RunningProcess>): Promise<RunningProcess> {
  starting.then((started) => t.teardown(() => started.stop('SIGKILL')), () => undefined)
  return starting
}

/** `text` as a regular expression matches it, every special character escaped. */
export const literal = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/** The backend environment of each DATA_DIR under TEST_BACKEND=nakama, and the latest one. */
const nakamaByDataDir = new Map<string, Promise<Record<string, string>>>()
let lastBackendEnv: Record<string, string> = {}

/**
 * Extra environment for the backend under test: {} for the embedded backend. TEST_BACKEND=nakama
 * points the platform at the Nakama named by NAKAMA_URL, NAKAMA_SERVER_KEY and NAKAMA_HTTP_KEY, or
 * else at a fake Nakama (test/fake-nakama) on a worker thread of this process, one per DATA_DIR, so each
 * DATA_DIR keeps its own accounts across restarts as the SQLite file does. Says which on stderr.
 */
export async function testBackendFor(dataDir: string): Promise<Record<string, string>> {
  if (process.env.TEST_BACKEND !== 'nakama') return {}
  let env = nakamaByDataDir.get(dataDir)
  if (!env) {
    env = import('../fake-nakama/env.js').then(({ nakamaForDataDir }) => nakamaForDataDir(dataDir))
    nakamaByDataDir.set(dataDir, env)
  }
  const resolved = await env
  backendEnvByDataDir.set(dataDir, resolved)
  return (lastBackendEnv = resolved)
}

const backendEnvByDataDir = new Map<string, Record<string, string>>()

/**
 * The backend environment a started platform of `dataDir` uses (else of the latest one), for
 * running bin/platform sub-commands beside it, e.g. `users grant`; {} on the embedded backend.
 */
export function testBackendEnv(dataDir?: string): Record<string, string | undefined> {
  return (dataDir === undefined ? undefined : backendEnvByDataDir.get(dataDir)) ?? lastBackendEnv
}

/** A fetch client that keeps cookies like a browser would for one origin. */
export class Client {
  cookies = new Map<string, string>()
  /** `base` may be pointed at a restarted platform: the client keeps its cookies. */
  constructor(public base: string, readonly origin?: string) {}

  async request(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Response> {
    const h: Record<string, string> = { ...headers }
    if (this.cookies.size) h.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ')
    if (this.origin && !('origin' in h)) h.origin = this.origin
    let payload: string | undefined
    if (body !== undefined) {
      payload = typeof body === 'string' ? body : JSON.stringify(body)
      h['content-type'] ??= 'application/json'
    }
    const res = await fetch(this.base + path, { method, headers: h, body: payload, redirect: 'manual' })
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';')
      const eq = pair!.indexOf('=')
      const name = pair!.slice(0, eq).trim()
      const value = pair!.slice(eq + 1).trim()
      if (value === '' || /max-age=0/i.test(line) || /expires=Thu, 01 Jan 1970/i.test(line)) this.cookies.delete(name)
      else this.cookies.set(name, value)
    }
    return res
  }

  get(path: string, headers?: Record<string, string>): Promise<Response> {
    return this.request('GET', path, undefined, headers)
  }
  post(path: string, body?: unknown, headers?: Record<string, string>): Promise<Response> {
    return this.request('POST', path, body, headers)
  }
  put(path: string, body?: unknown, headers?: Record<string, string>): Promise<Response> {
    return this.request('PUT', path, body, headers)
  }
}
