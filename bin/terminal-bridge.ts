import { loadBridgeConfig } from '../lib/config.js'
import { exitOnConfigError } from '../lib/config-error.js'
import { checkDataDir, checkDirectories, checkHome, checkShell } from '../lib/config-checks.js'
import { logExactLine, logLine } from '../lib/log.js'
import { killEndingSessions } from '../lib/bridge/session-kill.js'
import { listenAt } from '../lib/http/listen.js'
import { checkStoredSecret, loadSecret } from '../lib/secrets.js'
import { dropPrivileges, resolveShellAccount } from '../lib/bridge/account.js'
import { setUpContainment } from '../lib/bridge/containment.js'
import { createBridge } from '../lib/bridge/server.js'
import { onStop } from '../lib/stop-signal.js'

// Node opens its inspector on SIGUSR1, and the shells run as the account the bridge becomes, so they
// may signal it: a debugger on 127.0.0.1:9229 would run their code inside the bridge, ticket secret
// and all. A listener of its own takes the signal from Node (Node 20 has no --disable-sigusr1).
process.on('SIGUSR1', () => undefined)

/** SIGTERM (or SIGINT, SIGHUP): 1001 to every client, every shell ended, exit; never later than this (CONTRACT §6: 5 s). */
const SHUTDOWN_DEADLINE_MS = 4_500

async function main(): Promise<void> {
  // `check`: the settings as the start would take them, before an upgrade's restart; it writes nothing.
  const [command, ...args] = process.argv.slice(2)
  if (command !== undefined && (command !== 'check' || args.length > 0)) {
    process.stderr.write('usage: terminal-bridge [check]\n')
    process.exit(64)
  }
  const config = loadBridgeConfig()
  const account = resolveShellAccount(config)
  checkShell(config.shell)
  if (command === 'check') {
    // The shared secret as the start would read or make it, DATA_DIR's own checks included, but nothing made.
    if (config.ticketSecret === null) {
      checkDataDir(config.dataDir, { readOnly: true })
      checkStoredSecret(config.dataDir, 'terminal-ticket-secret')
    }
    process.stdout.write(`bridge settings ok: shells run as ${account.username} (${config.shell}), at most ${config.maxConn} connections, on ${config.host}\n`)
    return
  }
  // Only a root bridge switches accounts: any other runs shells as itself, whatever TERMINAL_USER says.
  if (config.user !== null && config.user !== account.username) logLine({ event: 'bridge.terminal_user_ignored', terminalUser: config.user, shellUser: account.username, why: 'the bridge is not root, so its shells run as its own account' })
  // DATA_DIR matters only when the ticket secret is shared through it (read, or generated there).
  if (config.ticketSecret === null) checkDirectories(config, { readOnly: true })
  const ticketKeys = loadSecret(config.dataDir, 'terminal-ticket-secret', config.ticketSecret)
  // A cgroup per terminal where the bridge may make them (its unit's, Delegate=yes); set up while
  // still root, which hands the bridge's part of the tree to the shell account.
  const containment = setUpContainment(account, config.maxConn)
  const bridge = createBridge({ config, account, ticketKeys, log: logLine, sessionLog: logExactLine, containment: containment.root !== null ? containment : null })
  // On the socket systemd holds (systemd/playfield-terminal.socket) when it passed one, else bound here.
  const { port, socket } = await listenAt(bridge.server, { hostVar: 'TERMINAL_HOST', host: config.host, portVar: 'TERMINAL_PORT', port: config.port, examples: '127.0.0.1 or ::1 (loopback only)' })
  // Root no longer, before the first connection is accepted: all that needed root, the secret in
  // DATA_DIR and the listening socket, is done, and a port in use is still reported by a process
  // that can write where it started.
  const root = process.getuid?.() === 0
  dropPrivileges(account)
  checkShell(config.shell, account.username)
  if (root) checkHome(account.home, account.username)
  // Where open terminals' access is checked, or null when it is not (TERMINAL_ACCESS_CHECK_S=0, or no platform port to ask).
  const accessCheck = config.platformUrl !== null && config.accessCheckMs > 0 ? { platform: config.platformUrl, seconds: config.accessCheckMs / 1000 } : null
  // Where each terminal's processes are grouped, so that ending it ends every one of them, or why they are not (then by session only).
  const cgroups = containment.root !== null ? { cgroup: containment.root } : { cgroup: null, reason: containment.reason }
  logLine({ event: 'bridge.listening', host: config.host, port, socket, max: config.maxConn, shellUser: account.username, accessCheck, containment: cgroups })
  // SIGHUP as SIGTERM: a bridge has nothing to reload, and the hang-up of the terminal that ran
  // `npm start` (or a shell's `kill -HUP $PPID`) must still end every session it holds.
  onStop(() => {
    logLine({ event: 'bridge.stopping' })
    // At the deadline, what is still in its kill grace is killed before the exit, not left running.
    setTimeout(() => {
      killEndingSessions()
      process.exit(0)
    }, SHUTDOWN_DEADLINE_MS).unref()
    void bridge.shutdown().then(() => process.exit(0))
  }, ['SIGTERM', 'SIGINT', 'SIGHUP'])
}

main().catch((err: unknown) => {
  // A bad value: one line naming the variable, exit 2 (CONTRACT §1). Anything else is a bug: its stack.
  exitOnConfigError(err)
  throw err
})
