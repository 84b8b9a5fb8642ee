import { readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs'
import path from 'node:path'

// Reading and writing cgroup (v2) files: what containment.ts builds its tree with, and what
// session-kill.ts ends a terminal's processes with.

/** Where the cgroup v2 hierarchy is mounted (its root, not a subtree), from /proc/self/mountinfo; null when it is not. */
export function unifiedMount(): string | null {
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    // "id parent major:minor root mountpoint options [optional...] - fstype source superoptions"
    const [left, right] = line.split(' - ')
    if (!left || !right || right.split(' ')[0] !== 'cgroup2') continue
    const fields = left.split(' ')
    if (fields[3] === '/') return fields[4]!.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)))
  }
  return null
}

/** The cgroup (v2) of process `pid` ('self': this one), as /proc names it ("/path"); null when it is gone or in none. */
export function cgroupOfPid(pid: number | 'self'): string | null {
  let text: string
  try {
    text = readFileSync(`/proc/${pid}/cgroup`, 'utf8')
  } catch (err) {
    if (pid === 'self') throw err
    return null
  }
  const line = text.split('\n').find((l) => l.startsWith('0::'))
  return line ? line.slice(3) : null
}

/**
 * The pids in `cgroup` and in every cgroup a shell made under it (the tree is the shell account's,
 * so `mkdir t1/x` and a move there is open to it); none once it is gone.
 */
export function cgroupMembers(cgroup: string): number[] {
  const pids: number[] = []
  try {
    pids.push(...readFileSync(path.join(cgroup, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number))
    for (const entry of readdirSync(cgroup, { withFileTypes: true })) if (entry.isDirectory()) pids.push(...cgroupMembers(path.join(cgroup, entry.name)))
  } catch {
    // Gone, or going.
  }
  return pids
}

/** Whether a process is left anywhere in `cgroup`'s subtree (`cgroup.events`); false once it is gone. */
export function cgroupPopulated(cgroup: string): boolean {
  try {
    return /^populated 1$/m.test(readFileSync(path.join(cgroup, 'cgroup.events'), 'utf8'))
  } catch {
    return false
  }
}

/** SIGKILL to every process in `cgroup`, and to every one forked meanwhile, by the kernel. */
export function killCgroup(cgroup: string): void {
  try {
    writeFileSync(path.join(cgroup, 'cgroup.kill'), '1')
  } catch {
    // Gone already.
  }
}

/** Remove `cgroup`, the cgroups under it first, once they are empty; false while a process (a dying one) is still in them. */
export function removeCgroup(cgroup: string): boolean {
  try {
    for (const entry of readdirSync(cgroup, { withFileTypes: true })) if (entry.isDirectory() && !removeCgroup(path.join(cgroup, entry.name))) return false
    rmdirSync(cgroup)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT'
  }
}
