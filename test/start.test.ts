import t from 'tap'
import { spawn, type ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import net from 'node:net'
import path from 'node:path'
import { freePort, ROOT, tempDir } from './helpers/platform.js'
import { ensureShellUser, SHELL_USER } from './helpers/terminal.js'

interface Started {
  child: ChildProcess
  ports: { platform: number; bridge: number }
  pids: number[]
  exited: Promise<{ code: number | null; signal: string | null }>
}

/** `npm start`'s script with its own ports; resolves once both servers said they listen. */
async function startBoth(): Promise<Started> {
  ensureShellUser()
  const ports = { platform: await freePort(), bridge: await freePort() }
  const env = {
    PATH: process.env.PATH, HOME: process.env.HOME, PORT: String(ports.platform), TERMINAL_PORT: String(ports.bridge),
    DATA_DIR: tempDir(), MANIFESTS_DIR: path.join(ROOT, 'manifests'), ...(process.getuid?.() === 0 ? { TERMINAL_USER: SHELL_USER } : {}),
  }
  const child = spawn(process.execPath, [path.join(ROOT, 'dist/bin/start.js')], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] })
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
  pids.push(...readChildren(child.pid!))
  return { child, ports, pids, exited }
}

/** Pids whose parent is `pid` (Linux /proc). */
function readChildren(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number)
  } catch {
    return []
  }
}

function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1', () => {
      socket.destroy()
      resolve(false)
    })
    socket.on('error', () => resolve(true))
  })
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
    t.ok(await refused(started.ports.platform), 'the platform port is closed')
    t.ok(await refused(started.ports.bridge), 'the bridge port is closed')
    t.same(started.pids.filter(alive), [], 'no child left behind')
  })
}

t.test('one server dying stops the other, and npm start fails', async (t) => {
  const started = await startBoth()
  const bridgePid = started.pids.find((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('terminal-bridge'))!
  process.kill(bridgePid, 'SIGKILL')
  t.same(await started.exited, { code: 1, signal: null })
  t.ok(await refused(started.ports.platform), 'the platform was stopped')
})
