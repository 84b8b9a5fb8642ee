import { loadBridgeConfig, type BridgeConfig } from '../lib/config.js'
import { ConfigError } from '../lib/config-error.js'
import { checkDirectories, checkShell, listenProblem } from '../lib/config-checks.js'
import { logLine } from '../lib/http/log.js'
import { logExactLine } from '../lib/http/log.js'
import { loadSecret } from '../lib/secrets.js'
import { dropPrivileges, resolveShellAccount, type ShellAccount } from '../lib/bridge/account.js'
import { createBridge } from '../lib/bridge/server.js'

/** SIGTERM: 1001 to every client, every shell ended, exit; never later than this (CONTRACT §6: 5 s). */
const SHUTDOWN_DEADLINE_MS = 4_500

let config: Readonly<BridgeConfig>
let account: ShellAccount
let ticketKeys: string[]
try {
  config = loadBridgeConfig()
  account = resolveShellAccount(config)
  checkShell(config.shell)
  // DATA_DIR matters only when the ticket secret is shared through it (read, or generated there).
  if (config.ticketSecret === null) checkDirectories(config, true)
  ticketKeys = loadSecret(config.dataDir, 'terminal-ticket-secret', config.ticketSecret)
} catch (err) {
  configFailed(err)
}

/** A bad value: one line naming the variable, exit 2 (CONTRACT §1). */
function configFailed(err: unknown): never {
  if (!(err instanceof ConfigError)) throw err
  process.stderr.write(`config: ${err.message}\n`)
  process.exit(2)
}

const bridge = createBridge({ config, account, ticketKeys, log: logLine, sessionLog: logExactLine })

const listenFailed = (err: NodeJS.ErrnoException): void => configFailed(listenProblem(err, 'TERMINAL_HOST', config.host, 'TERMINAL_PORT', config.port, '127.0.0.1 or ::1 (loopback only)'))
bridge.server.once('error', listenFailed)
bridge.server.listen(config.port, config.host, () => {
  bridge.server.off('error', listenFailed)
  // Root no longer, before the first connection is accepted (this callback runs before any I/O
  // callback): all that needed root, the secret in DATA_DIR and the listening socket, is done, and
  // a port in use is still reported by a process that can write where it started.
  try {
    dropPrivileges(account)
  } catch (err) {
    configFailed(err)
  }
  const address = bridge.server.address()
  const port = typeof address === 'object' && address ? address.port : config.port
  logLine({ event: 'bridge.listening', host: config.host, port, max: config.maxConn, shellUser: account.username })
})

const stop = (): void => {
  logLine({ event: 'bridge.stopping' })
  setTimeout(() => process.exit(0), SHUTDOWN_DEADLINE_MS).unref()
  void bridge.shutdown().then(() => process.exit(0))
}
process.once('SIGTERM', stop)
process.once('SIGINT', stop)
