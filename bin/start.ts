import { spawn, type ChildProcess } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

/** `npm start`: the platform and the terminal bridge together (CONTRACT §1); Ctrl-C stops both. */
const here = path.dirname(fileURLToPath(import.meta.url))
const children = new Map<string, ChildProcess>()
let stopping = false
let status = 0

function run(name: string, script: string, flags: string[] = []): void {
  const child = spawn(process.execPath, [...flags, path.join(here, script)], { stdio: 'inherit', env: process.env })
  children.set(name, child)
  child.once('exit', (code, signal) => {
    children.delete(name)
    // One of the two dying on its own leaves half a product: stop the other and report the failure.
    if (!stopping) {
      process.stderr.write(`start: ${name} exited (${signal ?? code}); stopping\n`)
      status = code || 1
      stop()
    }
    if (children.size === 0) process.exit(status)
  })
}

function stop(): void {
  stopping = true
  for (const child of children.values()) child.kill('SIGTERM')
}

run('platform', 'platform.js')
// The same V8 flag as bin/terminal-bridge (a small young generation bounds memory under a flood).
run('terminal-bridge', 'terminal-bridge.js', ['--max-semi-space-size=2'])
process.on('SIGINT', stop)
process.on('SIGTERM', stop)
