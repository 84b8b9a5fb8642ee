import { spawn, type ChildProcess } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { findPasswdEntry } from '../lib/bridge/account.js'

// `npm start`: the platform and the terminal bridge together (CONTRACT §1); Ctrl-C stops both.
const here = path.dirname(fileURLToPath(import.meta.url))
const children = new Map<string, ChildProcess>()
let stopping = false
let status = 0

/** The platform's own secrets: the bridge, whose account the shells share, never holds them. */
const PLATFORM_ONLY = ['SESSION_SECRET', 'NAKAMA_SERVER_KEY', 'NAKAMA_HTTP_KEY']

function run(name: string, script: string, flags: string[] = [], env: NodeJS.ProcessEnv = process.env): void {
  const child = spawn(process.execPath, [...flags, path.join(here, script)], { stdio: 'inherit', env })
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

/**
 * Stop both, once: Ctrl-C on `npm start` reaches this process twice (SIGINT from the terminal and
 * again from npm), and a second SIGTERM would end a server mid-shutdown (see lib/stop-signal.ts).
 */
function stop(): void {
  if (stopping) return
  stopping = true
  for (const child of children.values()) child.kill('SIGTERM')
}

/** The account `npm start` lends shells when run as root without TERMINAL_USER (.ci/run and the Deploy steps create it). */
const DEV_SHELL_ACCOUNT = 'playfield-shell'

// As bin/platform does: the SIGHUP handler first, before node loads the rest.
run('platform', 'platform.js', ['--import', path.join(here, '../lib/platform/reload-signal.js')])
// A root bridge needs an unprivileged TERMINAL_USER (CONTRACT §6) and refuses to start without
// one. For a local try-out as root, lend shells the playfield-shell account when it exists;
// otherwise run the platform alone (the terminal answers 502) and say how to get the terminal.
const needsAccount = process.getuid?.() === 0 && !process.env.TERMINAL_USER
const lend = needsAccount && findPasswdEntry(DEV_SHELL_ACCOUNT) !== null
if (needsAccount && !lend) {
  process.stderr.write(
    `start: terminal bridge not started: as root it needs TERMINAL_USER=<unprivileged account> ` +
      `(e.g. useradd -m ${DEV_SHELL_ACCOUNT}); the platform runs without it\n`,
  )
} else {
  // The same V8 flag as bin/terminal-bridge (a small young generation bounds memory under a flood).
  const bridgeEnv = { ...process.env }
  for (const name of PLATFORM_ONLY) delete bridgeEnv[name]
  if (lend) bridgeEnv.TERMINAL_USER = DEV_SHELL_ACCOUNT
  run('terminal-bridge', 'terminal-bridge.js', ['--max-semi-space-size=2'], bridgeEnv)
}
process.on('SIGINT', stop)
process.on('SIGTERM', stop)
// A closed terminal (or kill -HUP of this process) ends `npm start`: it must not leave the two
// servers behind holding their ports. A catalogue reload is `kill -HUP` of the platform's own pid.
process.on('SIGHUP', stop)
