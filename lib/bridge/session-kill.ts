import { readdirSync, readFileSync } from 'node:fs'

/** SIGHUP first; whatever is left this long after gets SIGKILL (CONTRACT §6). */
export const KILL_GRACE_MS = 2_000

/**
 * Pids of every live process in session `sid`, from field 6 of /proc/<pid>/stat. node-pty's kill()
 * signals only the shell, and `nohup`/disowned jobs live on in their own process groups of the
 * same session, so the session is the unit that ends.
 */
function sessionMembers(sid: number): number[] {
  const members: number[] = []
  for (const name of readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(name)) continue
    let stat: string
    try {
      stat = readFileSync(`/proc/${name}/stat`, 'utf8')
    } catch {
      continue // exited while we looked
    }
    // "pid (comm) state ppid pgrp session ...": comm may hold spaces and parentheses, so split after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    // A zombie (Z) or a dying process (X) has ended already; it waits only for its parent, which
    // for an orphaned job is init, to collect it.
    if (Number(fields[3]) === sid && fields[0] !== 'Z' && fields[0] !== 'X') members.push(Number(name))
  }
  return members
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig)
  } catch {
    // ESRCH: already gone.
  }
}

/** SIGHUP to each of `pids`, then SIGCONT, so a stopped job wakes to see it. */
function hangUp(pids: number[]): void {
  for (const pid of pids) signal(pid, 'SIGHUP')
  for (const pid of pids) signal(pid, 'SIGCONT')
}

/** How often the grace period looks whether the session is already empty. */
const POLL_MS = 50
/**
 * SIGHUP again to whatever is left this often during the grace period. bash can lose one: when it
 * comes just as readline is about to wait for input, readline's handler notes it and bash then
 * waits in pselect with nothing pending, alive until the SIGKILL (2 of 150 kills measured). A
 * second SIGHUP interrupts that wait and bash acts on it.
 */
const REHUP_MS = 250

/**
 * End every process of the session led by `sid`: SIGHUP (and SIGCONT, so stopped jobs see it) to
 * each member now and again every REHUP_MS, SIGKILL to those left after `graceMs`. Resolves once
 * the session is empty or the SIGKILL round is done, so a shutdown waits no longer than it must.
 */
export function endSession(sid: number, graceMs = KILL_GRACE_MS): Promise<void> {
  hangUp(sessionMembers(sid))
  const deadline = Date.now() + graceMs
  let rehup = Date.now() + REHUP_MS
  return new Promise((resolve) => {
    const timer = setInterval(() => {
      const left = sessionMembers(sid)
      const now = Date.now()
      if (left.length > 0 && now < deadline) {
        if (now < rehup) return
        rehup = now + REHUP_MS
        hangUp(left)
        return
      }
      for (const pid of left) signal(pid, 'SIGKILL')
      clearInterval(timer)
      resolve()
    }, POLL_MS)
  })
}
