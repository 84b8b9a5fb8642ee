import { onReload } from '../lib/platform/reload-signal.js'
import { loadPlatformConfig, type PlatformConfig } from '../lib/config.js'
import { exitOnConfigError } from '../lib/config-error.js'
import { checkDirectories, checkManifestsDir, openToOthers } from '../lib/config-checks.js'
import { createServer } from '../lib/http/server.js'
import { listenAt } from '../lib/http/listen.js'
import { logLine, messageOf } from '../lib/log.js'
import { closeGracefully } from '../lib/http/close.js'
import { createBackend } from '../lib/backend/create.js'
import { CatalogueHolder, CatalogueInvalid } from '../lib/catalogue/load.js'
import { buildRouter } from '../lib/platform/routes.js'
import { runUsersCommand } from '../lib/platform/users-cli.js'
import { runCheckCommand } from '../lib/platform/check-cli.js'
import { attachTerminalProxy } from '../lib/platform/terminal-proxy.js'
import { catalogueReloader } from '../lib/platform/catalogue-reload.js'
import { onStop } from '../lib/stop-signal.js'

/** SIGTERM: finish in-flight requests, then exit; never later than this. */
const SHUTDOWN_GRACE_MS = 9_000

// What the platform creates (DATA_DIR, the database and its WAL, generated secrets) is its own
// account's alone, as under its unit (UMask=0077): when `npm start` runs as root, the developer
// shells' account must not read password hashes and sessions from ./data.
process.umask(0o077)

async function serve(config: Readonly<PlatformConfig>): Promise<void> {
  // MANIFESTS_DIR first: run from the wrong directory, the start stops before it makes ./data there.
  checkManifestsDir(config.manifestsDir)
  checkDirectories(config)
  const mode = openToOthers(config.dataDir)
  if (mode) logLine({ event: 'platform.data_dir_open', dataDir: config.dataDir, mode, fix: `chmod 700 ${config.dataDir}: it holds the database (password hashes, sessions) and secrets` })
  const catalogue = await CatalogueHolder.open(config)
  const backend = await createBackend(config)
  await backend.syncLeaderboards([...catalogue.current().leaderboards.values()])
  const router = buildRouter({ config, backend, catalogue: () => catalogue.current(), now: Date.now })
  const server = createServer({ router, origins: config.origins, trustProxy: config.trustProxy })
  const terminalProxy = attachTerminalProxy(server, config)
  // On the socket systemd holds (systemd/playfield.socket) when it passed one, else bound here.
  const { port, socket } = await listenAt(server, { hostVar: 'HOST', host: config.host, portVar: 'PORT', port: config.port })
  logLine({ event: 'platform.listening', host: config.host, port, socket, backend: backend.kind, games: catalogue.current().games.size, pid: process.pid })
  // A SIGHUP that came while starting is handed on now (the files may have changed since read).
  onReload(catalogueReloader(catalogue, backend))
  onStop(() => {
    logLine({ event: 'platform.stopping' })
    void Promise.all([terminalProxy.close(), closeGracefully(server, SHUTDOWN_GRACE_MS)])
      .then(() => backend.close())
      .then(() => process.exit(0))
  })
}

async function main(): Promise<void> {
  try {
    const config = loadPlatformConfig()
    const [command, ...args] = process.argv.slice(2)
    // `check` takes no arguments: `check junk` is a usage error, not a check that ignored them.
    if (command === 'check' && args.length === 0) {
      process.stdout.write(`${await runCheckCommand(config)}\n`)
      process.exit(0)
    }
    if (command === 'users') process.exit(await runUsersCommand(config, args))
    if (command !== undefined) {
      process.stderr.write(`usage: platform [check | users grant|revoke <username> <role> | users list]\n`)
      process.exit(64)
    }
    await serve(config)
  } catch (err) {
    // A bad variable, and a directory or listen address that turns out unusable (CONTRACT §1).
    exitOnConfigError(err)
    // A catalogue that cannot be served (CONTRACT §5): one line per problem, exit 1.
    if (err instanceof CatalogueInvalid) {
      process.stderr.write(err.problems.map((line) => `${line}\n`).join(''))
      process.exit(1)
    }
    // Anything else that stops the start (the database locked past its busy time-out, a full
    // disk) may pass: one line, never a stack trace, and exit 1, which the unit restarts.
    process.stderr.write(`platform: cannot start: ${messageOf(err)}\n`)
    process.exit(1)
  }
}

void main()
