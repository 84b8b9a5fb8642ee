import { accessSync, chownSync, constants, existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { cgroupOfPid, cgroupPopulated, killCgroup, removeCgroup, unifiedMount } from './cgroup.js'
import type { ShellAccount } from './account.js'

/**
 * A cgroup (v2) for each terminal, so that ending a terminal ends every process it started, in
 * the kernel: a job that left the shell's session (`setsid`, a daemon's double fork) and a
 * process that forks faster than a scan of /proc can follow are still in the terminal's cgroup,
 * and `cgroup.kill` ends them all at once, forks in flight included.
 *
 * The layout, under the cgroup the bridge starts in (its systemd unit's, with `Delegate=yes`):
 *
 *     <own>/playfield-terminal.<pid>/          owned by the shell account
 *     <own>/playfield-terminal.<pid>/bridge/   the bridge itself
 *     <own>/playfield-terminal.<pid>/t<n>/     one per terminal: its shell and all it starts
 *
 * A process may move another only with write access to the `cgroup.procs` of the two cgroups'
 * common ancestor. The bridge, root at start, creates the parent, moves itself into `bridge/`, and
 * hands the parent and its `cgroup.procs` to the shell account it becomes; then each shell's wrapper,
 * running as that account, moves itself from `bridge/` into its terminal's cgroup before it runs
 * anything else (account.ts), so nothing the shell starts is ever outside it. No controller is
 * enabled: the cgroups only group processes, and limits stay the unit's (TasksMax).
 */
export interface Containment {
  /** `<own>/playfield-terminal.<pid>`: the bridge's part of the cgroup tree. */
  readonly root: string
  /** A new, empty cgroup for one terminal, or null when it could not be made; `live` gives the running terminals' own. */
  create(live: () => ReadonlySet<string>): string | null
}

/** Why a bridge runs without containment; its terminals are then ended by their session alone (session-kill.ts). */
export interface NoContainment {
  readonly root: null
  readonly reason: string
}

/** The name of a bridge's own part of the tree; the pid tells a live bridge's from one left behind. */
const PREFIX = 'playfield-terminal.'

/** Whether this process may enter directory `dir` (a 0700 tree of another account's, to a root without CAP_DAC_OVERRIDE, it may not). */
function canEnter(dir: string): boolean {
  try {
    accessSync(dir, constants.X_OK)
    return true
  } catch {
    return false
  }
}

/** The owner (uid) of `file`, or null when it cannot be looked at. */
function ownerOf(file: string): number | null {
  try {
    return statSync(file).uid
  } catch {
    return null
  }
}

/**
 * Whether the part of the tree `name` under `ownDir` (the cgroup `own`) has lost its bridge. A
 * live bridge is in its `bridge/`, which it made before it handed the tree over, so that
 * `bridge/` has the owner `ownDir` has (root, for a root bridge), and no other process may enter
 * it (its `cgroup.procs` stays that owner's). The pid in the name says little: another process
 * may have taken it since (one of the shell account's, which may then move itself into the
 * tree, whose `cgroup.procs` is the account's), or it may be another PID namespace's. So where
 * the tree can be looked into, only a bridge still setting up, in the cgroup it started in (this
 * one's, which the account may not enter), keeps a tree without such a `bridge/`. Where it cannot
 * (a 0700 tree, to a root without CAP_DAC_OVERRIDE, as under the unit, whose stop ends the whole
 * tree anyway), the named process must be gone or outside the tree too.
 */
function abandoned(ownDir: string, own: string, name: string): boolean {
  const tree = path.join(ownDir, name)
  const bridge = path.join(tree, 'bridge')
  const readable = canEnter(tree)
  if (readable && cgroupPopulated(bridge) && ownerOf(bridge) === ownerOf(ownDir)) return false
  const pid = Number(name.slice(PREFIX.length))
  if (pid === process.pid) return false
  const where = cgroupOfPid(pid)
  if (where === own) return false
  return readable || where === null || !where.startsWith(`${path.posix.join(own, name)}/`)
}

/** Back into the cgroup the bridge started in, from the part of the tree it could not finish. */
function moveBack(ownDir: string): void {
  try {
    writeFileSync(path.join(ownDir, 'cgroup.procs'), String(process.pid))
  } catch {
    // Then it stays in bridge/, which the next start sweeps.
  }
}

/**
 * A dead bridge's tree back to root, where this bridge is root: it belongs to the shell account,
 * and under the unit's umask (0077) a root without CAP_DAC_OVERRIDE could neither enter it nor
 * remove what is in it. chown needs only CAP_CHOWN, which the unit gives for the setup anyway.
 */
function reclaim(dir: string): void {
  if (process.getuid?.() !== 0) return
  try {
    chownSync(dir, 0, 0)
    for (const entry of readdirSync(dir, { withFileTypes: true })) if (entry.isDirectory()) reclaim(path.join(dir, entry.name))
  } catch {
    // What cannot be reclaimed stays, as before.
  }
}

/**
 * How deep and how many cgroups the bridge's tree may hold, set on its root while the bridge is
 * still root, so the shell account cannot raise them: a terminal's `t<n>` is at depth 1 and a
 * shell may nest its own cgroups 7 levels under it (a rootless container engine makes 2–3), and
 * each connection the bridge allows counts for 64 (its `t<n>` and what its shell makes), plus the
 * bridge's own. A cgroup is kernel memory that no controller here charges to anyone; unbounded,
 * `while mkdir x; do cd x; done` in one terminal would take it from the whole machine.
 */
const TREE_MAX_DEPTH = 8
const TREE_CGROUPS_PER_CONNECTION = 64

/** How long a start waits for the processes of a dead bridge's terminals to go, after their SIGKILL. */
const SWEEP_WAIT_MS = 1_000

/**
 * Parts of the tree whose bridge has exited without removing them (a SIGKILL, a crash; a bridge
 * cannot remove the cgroup it is in). Their terminals ended with their connections, so whatever
 * they left running (a job that ignored the PTY's hang-up) is killed here; outside systemd, which
 * ends a unit's whole tree when the bridge exits, nothing else would.
 */
function sweep(ownDir: string, own: string): void {
  const dead = readdirSync(ownDir)
    .filter((name) => name.startsWith(PREFIX) && /^[1-9][0-9]*$/.test(name.slice(PREFIX.length)) && abandoned(ownDir, own, name))
    .map((name) => path.join(ownDir, name))
  if (dead.length === 0) return
  for (const dir of dead) {
    reclaim(dir)
    killCgroup(dir)
  }
  const stop = performance.now() + SWEEP_WAIT_MS
  const sleeper = new Int32Array(new SharedArrayBuffer(4))
  for (let left = dead; left.length > 0 && performance.now() < stop; Atomics.wait(sleeper, 0, 0, 20)) left = left.filter((dir) => !removeCgroup(dir))
}

/**
 * Set up containment, before the bridge drops to `account` (a root bridge hands its part of the
 * tree to that account). Anything in the way (no cgroup v2, a read-only /sys/fs/cgroup, a kernel
 * without `cgroup.kill`, no right to make a cgroup where the bridge runs) leaves the bridge without
 * it, with the reason, and in the cgroup it started in.
 */
export function setUpContainment(account: ShellAccount, maxConn: number): Containment | NoContainment {
  let mount: string | null
  let own: string | null
  try {
    mount = unifiedMount()
    own = cgroupOfPid('self')
  } catch (err) {
    return { root: null, reason: `cannot read /proc (${(err as NodeJS.ErrnoException).code ?? String(err)})` }
  }
  if (mount === null || own === null) return { root: null, reason: 'no cgroup v2 hierarchy is mounted' }
  const ownDir = path.join(mount, own)
  const root = path.join(ownDir, `${PREFIX}${process.pid}`)
  try {
    sweep(ownDir, own)
    mkdirSync(root)
  } catch (err) {
    return { root: null, reason: `cannot make a cgroup in ${ownDir} (${(err as NodeJS.ErrnoException).code ?? String(err)})` }
  }
  let moved = false
  try {
    if (!existsSync(path.join(root, 'cgroup.kill'))) throw Object.assign(new Error('the kernel has no cgroup.kill (Linux 5.14)'), { code: 'ENOKILL' })
    writeFileSync(path.join(root, 'cgroup.max.depth'), String(TREE_MAX_DEPTH))
    writeFileSync(path.join(root, 'cgroup.max.descendants'), String(1 + maxConn * TREE_CGROUPS_PER_CONNECTION))
    const bridge = path.join(root, 'bridge')
    mkdirSync(bridge)
    writeFileSync(path.join(bridge, 'cgroup.procs'), String(process.pid))
    moved = true
    // Last: under the unit's umask (0077) the tree is 0700, and a root without CAP_DAC_OVERRIDE
    // cannot enter it once it is the account's.
    if (process.getuid?.() === 0 && account.uid !== 0) {
      chownSync(path.join(root, 'cgroup.procs'), account.uid, account.gid)
      chownSync(root, account.uid, account.gid)
    }
  } catch (err) {
    if (moved) moveBack(ownDir)
    removeCgroup(root)
    const e = err as NodeJS.ErrnoException
    return { root: null, reason: e.code === 'ENOKILL' ? e.message : `cannot set up ${root} (${e.code ?? String(err)})` }
  }
  let next = 0
  return {
    root,
    create(live: () => ReadonlySet<string>): string | null {
      let cleared = false
      for (let tries = 0; tries < 100; tries++) {
        const dir = path.join(root, `t${++next}`)
        try {
          mkdirSync(dir)
          return dir
        } catch (err) {
          const code = (err as NodeJS.ErrnoException).code
          // A name a shell took already (the tree is the shell account's; no terminal had it):
          // taken back when it is empty, skipped when a process is in it, never a refusal.
          if (code === 'EEXIST') {
            if (removeCgroup(dir)) next--
          } else if (code === 'EAGAIN' && !cleared) {
            // The tree's bound is reached: the cgroups shells made beside the running terminals'
            // own (none of which a terminal's end removes) go once they are empty, and the name is
            // tried again.
            cleared = true
            next--
            removeStrays(root, live())
          } else return null
        }
      }
      return null
    },
  }
}

/** Remove the empty cgroups under `root` other than `bridge/` and the running terminals' (`live`): what shells made. */
function removeStrays(root: string, live: ReadonlySet<string>): void {
  let entries: string[]
  try {
    entries = readdirSync(root, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name)
  } catch {
    return
  }
  for (const name of entries) if (name !== 'bridge' && !live.has(path.join(root, name))) removeCgroup(path.join(root, name))
}
