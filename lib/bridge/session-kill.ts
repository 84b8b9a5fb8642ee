import { readdirSync, readFileSync } from 'node:fs'
import { cgroupMembers, cgroupPopulated, killCgroup, removeCgroup } from './cgroup.js'

/** SIGHUP first; whatever is left this long after gets SIGKILL (CONTRACT §6). */
export const KILL_GRACE_MS = 2_000

/**
 * Pids of every live process in each of the sessions `sids`, from field 6 of /proc/<pid>/stat, in
 * one scan of /proc. node-pty's kill() signals only the shell, and `nohup`/disowned jobs live on in
 * their own process groups of the same session, so the session is the unit that ends.
 */
function sessionMembers(sids: ReadonlySet<number>): Map<number, number[]> {
  const members = new Map<number, number[]>()
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
    const sid = Number(fields[3])
    if (!sids.has(sid) || fields[0] === 'Z' || fields[0] === 'X') continue
    const list = members.get(sid)
    if (list) list.push(Number(name))
    else members.set(sid, [Number(name)])
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

/** A session being ended: its first SIGHUP is sent by the next scan (`hungUp`). */
interface Ending {
  sid: number
  /** The terminal's cgroup (containment.ts), whose members end with the session's; null without containment. */
  cgroup: string | null
  graceMs: number
  hungUp: boolean
  deadline: number
  rehup: number
  /** Set once its cgroup got `cgroup.kill`: until when its end waits for the kernel to have removed the killed (performance.now()). */
  killed: number
  resolve: () => void
}

/**
 * Every session being ended, all served by one scan of /proc per POLL_MS. A scan per session costs
 * sessions x processes synchronous reads of /proc 20 times a second, which at SIGTERM with 64
 * sessions holds the event loop past the 5 s the bridge has to exit (CONTRACT §6).
 */
const endings = new Set<Ending>()
/** Cgroups of ended sessions, removed once the kernel has seen their last process out, until this time (performance.now()). */
const removals = new Map<string, number>()
/** How long an ended terminal's cgroup is tried for removal; one left over goes with the bridge's tree (containment.ts). */
const REMOVE_MS = 10_000
let poll: NodeJS.Timeout | undefined
let immediate: NodeJS.Immediate | undefined

/** The live processes of every session being ended, by session id. */
function endingMembers(): Map<number, number[]> {
  return sessionMembers(new Set([...endings].map((e) => e.sid)))
}

/** What is left of `e`: its session's processes, and those in its cgroup that left the session (setsid). */
function leftOf(e: Ending, members: Map<number, number[]>): number[] {
  const left = members.get(e.sid) ?? []
  if (e.cgroup === null) return left
  return [...new Set([...left, ...cgroupMembers(e.cgroup)])]
}

/** How long an end waits for a killed cgroup to empty: SIGKILL takes effect as each process next runs, and an exit is not instant. */
const KILLED_WAIT_MS = 500

/**
 * The grace is over or nothing is left: SIGKILL to whatever is, in the cgroup by the kernel (forks
 * in flight too). Over once the cgroup is empty, so that a shutdown that waited for the end leaves
 * none of its processes behind; its removal follows.
 */
function finish(e: Ending, left: number[], now: number): void {
  for (const pid of left) signal(pid, 'SIGKILL')
  if (e.cgroup !== null && (left.length > 0 || cgroupPopulated(e.cgroup))) {
    killCgroup(e.cgroup)
    e.killed = now + KILLED_WAIT_MS
    return
  }
  done(e, now)
}

function done(e: Ending, now: number): void {
  if (e.cgroup !== null) removals.set(e.cgroup, now + REMOVE_MS)
  endings.delete(e)
  e.resolve()
}

function tryRemovals(now: number): void {
  for (const [cgroup, until] of removals) if (removeCgroup(cgroup) || now > until) removals.delete(cgroup)
}

function tick(): void {
  immediate = undefined
  // Monotonic: a wall-clock step must neither cut the grace short nor stretch it without end.
  const now = performance.now()
  tryRemovals(now)
  const members = endings.size > 0 ? endingMembers() : new Map<number, number[]>()
  for (const e of endings) {
    if (e.killed > 0) {
      if (!cgroupPopulated(e.cgroup!) || now > e.killed) done(e, now)
      continue
    }
    const left = leftOf(e, members)
    if (!e.hungUp) {
      e.hungUp = true
      e.deadline = now + e.graceMs
      e.rehup = now + REHUP_MS
      hangUp(left)
      continue
    }
    if (left.length > 0 && now < e.deadline) {
      if (now < e.rehup) continue
      e.rehup = now + REHUP_MS
      hangUp(left)
      continue
    }
    finish(e, left, now)
  }
  if (endings.size === 0 && removals.size === 0 && poll) {
    clearInterval(poll)
    poll = undefined
  }
}

/**
 * End every process of the session led by `sid`, and of its terminal's `cgroup` when it has one:
 * SIGHUP (and SIGCONT, so stopped jobs see it) to each member at once (sessions ended in one turn
 * of the event loop share that scan) and again every REHUP_MS, SIGKILL to those left after
 * `graceMs`. Resolves once the session and the cgroup are empty or the SIGKILL round is done, so a
 * shutdown waits no longer than it must.
 */
export function endSession(sid: number, graceMs = KILL_GRACE_MS, cgroup: string | null = null): Promise<void> {
  return new Promise((resolve) => {
    endings.add({ sid, cgroup, graceMs, hungUp: false, deadline: 0, rehup: 0, killed: 0, resolve })
    immediate ??= setImmediate(tick)
    poll ??= setInterval(tick, POLL_MS)
  })
}

/**
 * SIGKILL now to every process of every session still being ended, in one scan: for a deadline
 * that must not wait out the grace. A bridge that exits at its SIGTERM deadline while sessions are
 * still in their grace (a loaded machine delays the rounds) would otherwise leave their jobs that
 * ignore SIGHUP running, orphaned.
 */
export function killEndingSessions(): void {
  if (endings.size === 0) return
  const members = endingMembers()
  for (const pids of members.values()) for (const pid of pids) signal(pid, 'SIGKILL')
  for (const e of endings) if (e.cgroup !== null) killCgroup(e.cgroup)
}
