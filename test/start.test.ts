import t, { type Test } from 'tap'
import { setTimeout as sleep } from 'node:timers/promises'
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { copyFileSync, readFileSync } from 'node:fs'
import net from 'node:net'
import path from 'node:path'
import { childPids, freePort, ROOT, tempDir } from './helpers/platform.js'
import { ensureShellUser, SHELL_USER } from './helpers/terminal.js'

interface Started {
  child: ChildProcess
  ports: { platform: number; bridge: number }
  pids: number[]
  exited: Promise<{ code: number | null; signal: string | null }>
}

/**
 * `npm start`'s script with its own ports; resolves once both servers said they listen. `group`:
 * in a process group of its own, as a terminal runs it (Ctrl-C is SIGINT to the whole group).
 */
async function startBoth(group = false, npm = false): Promise<Started & { text: () => string }> {
  ensureShellUser()
  const ports = { platform: await freePort(), bridge: await freePort() }
  const env = {
    PATH: process.env.PATH, HOME: process.env.HOME, PORT: String(ports.platform), TERMINAL_PORT: String(ports.bridge),
    DATA_DIR: tempDir(), MANIFESTS_DIR: path.join(ROOT, 'manifests'), ...(process.getuid?.() === 0 ? { TERMINAL_USER: SHELL_USER } : {}),
  }
  const [command, args] = npm ? ['npm', ['start']] : [process.execPath, [path.join(ROOT, 'dist/bin/start.js')]]
  const child = spawn(command, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: group })
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })))
  const pids: number[] = []
  let text = ''
  await new Promise<void>((resolve, reject) => {
    child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      text += d
      if (text.includes('"platform.listening"') && text.includes('"bridge.listening"')) resolve()
    })
    void exited.then(() => reject(new Error(`start exited early: ${text}`)))
  })
  pids.push(...descendants(child.pid!))
  return { child, ports, pids, exited, text: () => text }
}

/** Every process below `pid`. */
function descendants(pid: number): number[] {
  return childPids(pid).flatMap((child) => [child, ...descendants(child)])
}

/**
 * 'none' when a connection to the port is refused; else who listens on it (`ss`), so that a
 * failure names the holder: one of ours, or another test's server on a port reused at once.
 */
async function listener(port: number): Promise<string> {
  const connected = await new Promise<boolean>((resolve) => {
    const socket = net.connect(port, '127.0.0.1', () => {
      socket.destroy()
      resolve(true)
    })
    socket.on('error', () => resolve(false))
  })
  if (!connected) return 'none'
  try {
    return execFileSync('ss', ['-Hltnp', `sport = :${port}`], { encoding: 'utf8' }).trim() || 'a listener ss does not show'
  } catch (err) {
    return `a listener (ss failed: ${(err as Error).message})`
  }
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
  t.test(`${signal} to npm start stops both servers`, async (t) => {
    const started = await startBoth()
    t.equal(started.pids.length, 2, 'two children')
    started.child.kill(signal)
    t.same(await started.exited, { code: 0, signal: null })
    t.equal(await listener(started.ports.platform), 'none', 'the platform port is closed')
    t.equal(await listener(started.ports.bridge), 'none', 'the bridge port is closed')
    t.same(started.pids.filter(alive), [], 'no child left behind')
  })
}

// A supervisor, `timeout` or `kill <pid>` signals npm alone: npm hands SIGTERM to its script,
// which must be start.js itself (exec), not a shell that would leave start.js and both servers running.
t.test('SIGTERM to the npm process of `npm start` alone stops both servers', async (t) => {
  const started = await startBoth(false, true)
  t.equal(started.pids.length, 3, 'npm runs start.js, which runs the two servers')
  started.child.kill('SIGTERM')
  t.same(await started.exited, { code: 0, signal: null }, 'npm waits for start.js, which waits for both')
  t.equal(await listener(started.ports.platform), 'none', 'the platform port is closed')
  t.equal(await listener(started.ports.bridge), 'none', 'the bridge port is closed')
  t.same(started.pids.filter(alive), [], 'nothing left behind')
})

/**
 * Both servers stop once and gracefully under `signal` (a request in progress keeps the platform in its
 * stop while the signals come): `toGroup` reaches start.js and both servers, as from a terminal or
 * `timeout`; `thenToStart` comes 300 ms later to start.js alone, as npm hands its own on.
 */
async function stopsOnceGracefully(t: Test, toGroup: NodeJS.Signals, thenToStart?: NodeJS.Signals): Promise<void> {
  const started = await startBoth(true)
  const socket = net.connect(started.ports.platform, '127.0.0.1')
  const body = JSON.stringify({ username: 'nobody_here', password: 'not the password' })
  socket.write(`POST /api/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`)
  let answer = ''
  socket.setEncoding('utf8').on('data', (d: string) => (answer += d))
  const closed = new Promise((resolve) => socket.once('close', resolve))
  await sleep(200)
  process.kill(-started.child.pid!, toGroup)
  await sleep(300)
  if (thenToStart) started.child.kill(thenToStart)
  await sleep(300)
  socket.write(body.slice(5))
  await closed
  t.match(answer, /^HTTP\/1\.1 401 /, 'the request in progress got its answer')
  t.same(await started.exited, { code: 0, signal: null })
  const events = started.text().split('\n').filter((l) => l.startsWith('{')).map((l) => (JSON.parse(l) as { event: string }).event)
  t.same(events.filter((e) => e.endsWith('.stopping')).sort(), ['bridge.stopping', 'platform.stopping'], 'one stopping line each')
  t.same(started.pids.filter(alive), [], 'no child left behind')
}

t.test('Ctrl-C under npm (SIGINT to the group, then again from npm) stops each server once, gracefully', (t) => stopsOnceGracefully(t, 'SIGINT', 'SIGINT'))

// `timeout` (without --foreground) and a supervisor's group kill: each server gets SIGTERM from
// them and again from start.js, and the second must not end it mid-stop.
t.test("timeout's stop (SIGTERM to the group, so twice to each server) stops each server once, gracefully", (t) => stopsOnceGracefully(t, 'SIGTERM'))

t.test('one server dying stops the other, and npm start fails', async (t) => {
  const started = await startBoth()
  const bridgePid = started.pids.find((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('terminal-bridge'))!
  process.kill(bridgePid, 'SIGKILL')
  t.same(await started.exited, { code: 1, signal: null })
  t.equal(await listener(started.ports.platform), 'none', 'the platform was stopped')
})

t.test('npm start in a checkout not built yet: one line saying what to run, not a stack trace', async (t) => {
  const checkout = tempDir()
  copyFileSync(path.join(ROOT, 'package.json'), path.join(checkout, 'package.json'))
  const run = spawnSync('npm', ['start'], { cwd: checkout, encoding: 'utf8', env: { PATH: process.env.PATH, HOME: process.env.HOME } })
  t.equal(run.status, 1)
  t.match(run.stderr, /^start: not built yet: run npm install \(or npm run build\)$/m)
  t.notMatch(run.stderr, /Cannot find module|node:internal/, 'no stack trace')
})
