import type { AddressInfo } from 'node:net'
import type { Test } from 'tap'
import { ACCOUNT_MIGRATIONS, AccountStore } from '../../lib/backend/embedded/accounts.js'
import { openDatabase } from '../../lib/backend/embedded/db.js'
import type { Backend } from '../../lib/backend/backend.js'
import { loadPlatformConfig } from '../../lib/config.js'
import { Router } from '../../lib/http/router.js'
import { createServer } from '../../lib/http/server.js'
import type { App } from '../../lib/platform/app.js'
import { terminalTicketKeys } from '../../lib/platform/terminal-routes.js'
import { createAuth } from '../../lib/platform/session.js'
import { Client, tempDir } from './platform.js'

/**
 * Route tables mounted in this process over the embedded account store (a real SQLite file) and a
 * real HTTP server on an ephemeral port, with a clock the test moves: for what only time shows
 * (a token's refresh, a Retry-After that must suffice). Closed when `t` ends.
 */
export async function startClockedPlatform(t: Test, mounts: ((router: Router, app: App) => void)[]): Promise<{ client: Client; clock: { now: number } }> {
  const dataDir = tempDir()
  const clock = { now: Date.now() }
  const now = (): number => clock.now
  const config = loadPlatformConfig({ DATA_DIR: dataDir })
  const db = openDatabase(dataDir, ACCOUNT_MIGRATIONS)
  // Only the account half of the backend is reached by the account routes.
  const backend = new AccountStore(db, config, now) as unknown as Backend
  // No bridge beside it: nothing to tell when a session ends.
  const app: App = { config, backend, auth: createAuth(config, backend, now), catalogue: () => { throw new Error('unused') }, now, ticketKeys: terminalTicketKeys(config), accessChanged: () => {} }
  const router = new Router()
  for (const mount of mounts) mount(router, app)
  const server = createServer({ router, origins: config.origins, trustProxy: config.trustProxy, log: () => {} })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => {
    server.closeAllConnections()
    server.close()
    db.close()
  })
  return { client: new Client(`http://127.0.0.1:${(server.address() as AddressInfo).port}`), clock }
}
