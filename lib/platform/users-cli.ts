import { ConfigError } from '../config-error.js'
import { checkDataDir } from '../config-checks.js'
import type { PlatformConfig } from '../config.js'
import { createBackend } from '../backend/create.js'
import { databaseExists } from '../backend/embedded/db.js'
import type { Account, Backend } from '../backend/backend.js'
import { escapeControls, messageOf } from '../log.js'
import { existingSecret } from '../secrets.js'
import { noticeAccessChanged } from './access-notice.js'

/** Roles an operator may grant: `developer` opens the developer terminal (CONTRACT §3), `admin` implies it. */
const ROLES: readonly string[] = ['admin', 'developer']

const USAGE = 'usage: platform users grant <username> <role> | users revoke <username> <role> | users list'

/**
 * `bin/platform users …`: grant, revoke and list roles through the configured backend. On the
 * embedded backend it opens the same SQLite file (WAL) as a running platform, which reads roles
 * at each check, so a grant works at once. Returns the exit code: 0 done, 1 refused, 64 usage.
 */
export async function runUsersCommand(config: Readonly<PlatformConfig>, args: string[]): Promise<number> {
  const [action, username, role, ...rest] = args
  const change = action === 'grant' || action === 'revoke'
  if (!(change ? username && role && rest.length === 0 : action === 'list' && username === undefined)) {
    process.stderr.write(USAGE + '\n')
    return 64
  }
  if (change && !ROLES.includes(role!)) {
    process.stderr.write(`users: unknown role ${JSON.stringify(role)}; roles are ${ROLES.join(', ')}\n`)
    return 1
  }
  // A mistyped DATA_DIR (or ./data from the wrong directory) has no database, and a new one would
  // hold no account to grant or list: say so, and make nothing there (no database, no secrets).
  // One the platform could not use at all is its config line first, as for the server.
  if (config.gameBackend === 'embedded' && !databaseExists(config.dataDir)) {
    checkDataDir(config.dataDir)
    process.stderr.write(`users: no database in DATA_DIR ${JSON.stringify(config.dataDir)}: is it the platform's? (its default, ./data, is read from the current directory)\n`)
    return 1
  }
  let backend: Backend | undefined
  try {
    // Opening is inside: a locked or foreign database file is one line too.
    backend = await createBackend(config)
    if (action === 'list') {
      for (const account of await backend.listPrivileged()) process.stdout.write(line(account))
      return 0
    }
    const account = action === 'grant' ? await backend.grantRole(username!, role!) : await backend.revokeRole(username!, role!)
    process.stdout.write(`${action === 'grant' ? 'granted' : 'revoked'} ${role} ${action === 'grant' ? 'to' : 'from'} ${account.username}\n`)
    process.stdout.write(line(account))
    // The user's open terminals end now, not at the bridge's next check: the bridge is told, with
    // the ticket secret the platform uses (never one this command would make in DATA_DIR).
    const keys = action === 'revoke' ? existingSecret(config.dataDir, 'terminal-ticket-secret', config.ticketSecret) : null
    if (keys !== null) await noticeAccessChanged(config, keys)
    return 0
  } catch (err) {
    // A bad DATA_DIR or variable is the caller's config line and exit 2, as for the server.
    if (err instanceof ConfigError) throw err
    // One line, never a stack trace: the contract's message (e.g. 503 when Nakama is down or contended), else the error's.
    process.stderr.write(`users: ${escapeControls(messageOf(err))}\n`)
    return 1
  } finally {
    await backend?.close()
  }
}

function line(account: Account): string {
  return `${account.username}\t${account.id}\t${account.roles.join(',') || '-'}\n`
}
