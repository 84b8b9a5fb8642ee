import { existsSync, readFileSync } from 'node:fs'
import os from 'node:os'
import { ConfigError, type BridgeConfig } from '../config.js'

/** setpriv (util-linux) drops to the account with its own supplementary groups (node-pty keeps root's). */
const SETPRIV = '/usr/bin/setpriv'

/** Who the shells run as, and how to get there. */
export interface ShellAccount {
  username: string
  uid: number
  gid: number
  home: string
  /** True when the bridge runs as root and must drop to `uid`/`gid` for each shell. */
  drop: boolean
}

/** The passwd entry of `name`, from /etc/passwd. */
function passwdEntry(name: string): { uid: number; gid: number; home: string } | null {
  for (const line of readFileSync('/etc/passwd', 'utf8').split('\n')) {
    const fields = line.split(':')
    if (fields[0] === name && fields.length >= 7) return { uid: Number(fields[2]), gid: Number(fields[3]), home: fields[5]! }
  }
  return null
}

/**
 * The account shells run as (CONTRACT §6: never root). A root bridge needs TERMINAL_USER naming an
 * unprivileged account; any other bridge runs shells as itself. Throws ConfigError (exit 2).
 */
export function resolveShellAccount(config: Readonly<BridgeConfig>, uid = process.getuid?.() ?? -1): ShellAccount {
  if (uid !== 0) {
    const self = os.userInfo()
    return { username: self.username, uid: self.uid, gid: self.gid, home: self.homedir, drop: false }
  }
  if (config.user === null || config.user === 'root') {
    throw new ConfigError('TERMINAL_USER: must name an unprivileged account when the bridge runs as root; shells never run as root')
  }
  const entry = passwdEntry(config.user)
  if (!entry) throw new ConfigError(`TERMINAL_USER: ${JSON.stringify(config.user)} is not an account in /etc/passwd; expected an existing unprivileged account`)
  if (entry.uid === 0 || entry.gid === 0) throw new ConfigError(`TERMINAL_USER: ${JSON.stringify(config.user)} has uid or gid 0; expected an unprivileged account`)
  if (!existsSync(SETPRIV)) throw new ConfigError(`TERMINAL_USER: ${SETPRIV} (util-linux) is needed to drop privileges and is missing`)
  return { username: config.user, ...entry, drop: true }
}

/**
 * Close every descriptor above 2, then exec the login shell. node-pty's forkpty child inherits
 * every descriptor of the bridge that is not close-on-exec, and the PTY masters of the other
 * sessions never are (openpty sets no O_CLOEXEC): without this one shell could read another's.
 * bash, because dash cannot name descriptors above 9.
 */
const CLOSE_AND_EXEC = 'for fd in /proc/$$/fd/*; do fd=${fd##*/}; if [ "$fd" -gt 2 ]; then eval "exec $fd>&-"; fi; done; exec "$0" -l'

/** The program and arguments that start `shell` as a login shell of `account`. */
export function shellCommand(account: ShellAccount, shell: string): { file: string; args: string[] } {
  const closer = ['/bin/bash', '--noprofile', '--norc', '-c', CLOSE_AND_EXEC, shell]
  if (!account.drop) return { file: closer[0]!, args: closer.slice(1) }
  return {
    file: SETPRIV,
    args: ['--reuid', String(account.uid), '--regid', String(account.gid), '--init-groups', '--', ...closer],
  }
}
