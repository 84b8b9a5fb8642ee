import { readFileSync } from 'node:fs'
import os from 'node:os'
import { ConfigError } from '../config-error.js'
import type { BridgeConfig } from '../config.js'

/** Who the shells run as: the bridge's own account, once a root bridge has dropped to it. */
export interface ShellAccount {
  username: string
  uid: number
  gid: number
  home: string
}

/** The passwd entry of `name`, from /etc/passwd; null when there is none. */
export function findPasswdEntry(name: string): { uid: number; gid: number; home: string } | null {
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
export function resolveShellAccount(config: Readonly<BridgeConfig>): ShellAccount {
  const uid = process.getuid?.() ?? -1
  if (uid !== 0) {
    let self: os.UserInfo<string>
    try {
      self = os.userInfo()
    } catch {
      // A uid with no passwd entry (a container's `--user 12345`): no name, home or login shell to give a shell.
      throw new ConfigError(`TERMINAL_USER: the bridge runs as uid ${uid}, which has no account in /etc/passwd; expected to run as an account with a home directory, or as root with TERMINAL_USER`)
    }
    return { username: self.username, uid: self.uid, gid: self.gid, home: self.homedir }
  }
  if (config.user === null || config.user === 'root') {
    throw new ConfigError('TERMINAL_USER: must name an unprivileged account when the bridge runs as root; shells never run as root')
  }
  const entry = findPasswdEntry(config.user)
  if (!entry) throw new ConfigError(`TERMINAL_USER: ${JSON.stringify(config.user)} is not an account in /etc/passwd; expected an existing unprivileged account`)
  if (entry.uid === 0 || entry.gid === 0) throw new ConfigError(`TERMINAL_USER: ${JSON.stringify(config.user)} has uid or gid 0; expected an unprivileged account`)
  return { username: config.user, ...entry }
}

/**
 * A root bridge becomes `account` for good, with that account's own supplementary groups, once
 * its configuration and secrets are read and before it accepts a connection: it never parses a
 * client's bytes as root, and its shells run as itself. The change of user also makes the kernel
 * mark the process not dumpable, so its shells, the same account, cannot read its environment
 * (TERMINAL_TICKET_SECRET), its memory or its descriptors through /proc, nor ptrace it.
 */
export function dropPrivileges(account: ShellAccount): void {
  if (process.getuid?.() !== 0) return
  try {
    // Node has initgroups (getgrouplist, so NSS groups too); @types/node 20 leaves it out.
    ;(process as unknown as { initgroups(user: string, extraGroup: number): void }).initgroups(account.username, account.gid)
    process.setgid!(account.gid)
    process.setuid!(account.uid)
  } catch (err) {
    // A root without CAP_SETUID and CAP_SETGID (a unit's CapabilityBoundingSet) cannot switch.
    throw new ConfigError(`TERMINAL_USER: the bridge could not switch to ${JSON.stringify(account.username)} (${(err as NodeJS.ErrnoException).code ?? String(err)}); a root bridge needs CAP_SETUID and CAP_SETGID`)
  }
  // The groups initgroups found (NSS too), as the shells would hold them: the root group among
  // them is root's files, as a primary gid 0 would be (resolveShellAccount refuses that one).
  if (process.getgroups!().includes(0)) {
    throw new ConfigError(`TERMINAL_USER: ${JSON.stringify(account.username)} is a member of group 0 (root); expected an unprivileged account`)
  }
}

/**
 * Close every descriptor above 2, then exec the login shell. node-pty's forkpty child inherits
 * every descriptor of the bridge that is not close-on-exec, and the PTY masters of the other
 * sessions never are (openpty sets no O_CLOEXEC): without this one shell could read another's.
 * bash, because dash cannot name descriptors above 9. The wrapper's own PWD (node-pty sets it) and
 * SHLVL (bash's exec sets it to 0) are left out: the login shell sets what it wants itself.
 */
const CLOSE_AND_EXEC = 'for fd in /proc/$$/fd/*; do fd=${fd##*/}; if [ "$fd" -gt 2 ]; then eval "exec $fd>&-"; fi; done; unset PWD OLDPWD; exec /usr/bin/env -u SHLVL "$0" -l'

/**
 * First of all, with a terminal cgroup ($1; containment.ts), the wrapper moves itself into it, so
 * the shell and everything it starts are there from their first instruction. A wrapper that
 * cannot (its cgroup gone: the terminal is being ended) does not start the shell: an uncontained
 * shell would be one that `kill` and a close might not end.
 */
const ENTER_CGROUP = 'if [ -n "$1" ]; then printf "%s\\n" $$ >"$1/cgroup.procs" || { echo "playfield: the shell could not enter its cgroup $1" >&2; exit 126; }; fi; '

/** The program and arguments that start `shell` as a login shell (of the bridge's own account), in `cgroup` when given. */
export function shellCommand(shell: string, cgroup: string | null = null): { file: string; args: string[] } {
  const args = ['--noprofile', '--norc', '-c', ENTER_CGROUP + CLOSE_AND_EXEC, shell]
  if (cgroup !== null) args.push(cgroup)
  return { file: '/bin/bash', args }
}
