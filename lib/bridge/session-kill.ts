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
  // Newest first: a process that forks and lets its parent exit over and over is caught by a
  // read straight after the listing, before it has moved on to a pid the listing does not hold.
  const pids = readdirSync('/proc').filter((name) => /^[0-9]+$/.test(name)).sort((a, b) => Number(b) - Number(a))
  for (const name of pids) {
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
 * Empty scans in a row that count as the session being over. One is not enough: a process that
 * forks and exits between the listing and its read is seen by neither.
 */
const EMPTY_SCANS = 3
/** After the grace: SIGKILL rounds, one per POLL_MS, to whatever appears, at most this many. */
const KILL_ROUNDS = 40

/**
 * End every process of the session led by `sid`: SIGHUP (and SIGCONT, so stopped jobs see it) to
 * each member now and again every REHUP_MS, then from `graceMs` on SIGKILL to every member each
 * POLL_MS until EMPTY_SCANS scans in a row find none (or KILL_ROUNDS rounds have passed). Resolves
 * as soon as the session is over, so a shutdown waits no longer than it must.
 */
export function endSession(sid: number, graceMs = KILL_GRACE_MS): Promise<void> {
  hangUp(sessionMembers(sid))
  const deadline = Date.now() + graceMs
  let rehup = Date.now() + REHUP_MS
  let empty = 0
  let killRounds = 0
  return new Promise((resolve) => {
    const timer = setInterval(() => {
      const left = sessionMembers(sid)
      empty = left.length === 0 ? empty + 1 : 0
      const now = Date.now()
      if (empty >= EMPTY_SCANS || killRounds >= KILL_ROUNDS) {
        clearInterval(timer)
        return resolve()
      }
      if (now < deadline) {
        if (left.length === 0 || now < rehup) return
        rehup = now + REHUP_MS
        return hangUp(left)
      }
      killRounds++
      for (const pid of left) signal(pid, 'SIGKILL')
    }, POLL_MS)
  })
}
