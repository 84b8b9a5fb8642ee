import { spawn } from 'node:child_process'
import { chownSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import t, { type Test } from 'tap'
import { alive, cgroupHierarchy, connect, removeCgroupTree, ORIGIN, SHELL_USER, startBridge, type TermClient, TICKET_SECRET, uidOf, until } from './helpers/terminal.js'
import { BRIDGE_JS, startPlatform, type RunningProcess } from './helpers/platform.js'

const found = cgroupHierarchy()
const skip = 'why' in found ? found.why : false
const ownDir = 'why' in found ? '' : found.path
const ownCgroup = 'why' in found ? '' : found.own

let privateCount = 0

/**
 * A cgroup of this test's own to start bridges in, as systemd gives a unit one: a bridge sweeps
 * the dead bridges' trees beside its own at start, and other test files' bridges, started in this
 * process's cgroup, must not sweep this file's (nor this file's theirs). Removed at the end.
 */
function privateCgroup(): { dir: string; cgroup: string; start(env?: Record<string, string>): Promise<RunningProcess>; remove(): Promise<void> } {
  const name = `playfield-test.${process.pid}.${++privateCount}`
  const dir = path.join(ownDir, name)
  mkdirSync(dir)
  const wrapper = ['/bin/sh', '-c', 'echo $$ >"$0/cgroup.procs" && exec "$@"', dir]
  return {
    dir,
    cgroup: path.join(ownCgroup, name),
    start: (env = {}) => startBridge(env, wrapper),
    async remove() {
      for (const stop = Date.now() + 5_000; !removeCgroupTree(dir) && Date.now() < stop; ) await sleep(50)
    },
  }
}

const pidOf = (c: TermClient): number => c.frames.find((f) => f.type === 'created')!.pid as number

/** The pids of live processes with `arg` as one of their arguments (a marker no other process has). */
function withArg(arg: string): number[] {
  const pids: number[] = []
  for (const name of readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(name)) continue
    try {
      if (readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').includes(arg) && alive(Number(name))) pids.push(Number(name))
    } catch {
      // exited while we looked
    }
  }
  return pids
}

/** A process's cgroup v2 path, as /proc/<pid>/cgroup names it. */
const cgroupOf = (pid: number): string => readFileSync(`/proc/${pid}/cgroup`, 'utf8').split('\n').find((l) => l.startsWith('0::'))!.slice(3)

/** Start another shell on `c` (after an exit or a refusal); the cgroup it runs in once its wrapper has entered it. */
async function nextShellCgroup(c: TermClient): Promise<string> {
  const from = c.frames.length
  c.send({ type: 'create' })
  const created = await c.frame('created', from)
  await c.run('true')
  return cgroupOf(created.pid as number)
}

async function shell(port: number): Promise<TermClient> {
  const c = await connect(port)
  c.send({ type: 'create' })
  await c.frame('created')
  return c
}

/**
 * Start jobs that a scan of the shell's session cannot end: one in a session of its own
 * (`setsid -f`), one that also ignores SIGHUP, and one that hops: every 10 ms it starts its
 * successor in a new session and exits, so no pid or session lasts. Each carries `tag` as an
 * argument; resolves once all three run.
 */
async function escapees(c: TermClient, tag: string): Promise<string[]> {
  const marks = [`${tag}1`, `${tag}2`, `hop${tag}`].map((m) => m.replace(/[^0-9a-z]/g, ''))
  await c.run(`setsid -f sleep ${marks[0]} </dev/null >/dev/null 2>&1`)
  await c.run(`setsid -f sh -c 'trap "" HUP; exec sleep ${marks[1]}' </dev/null >/dev/null 2>&1`)
  await c.run(`export HOP='sleep 0.01; setsid -f sh -c "$HOP" ${marks[2]} </dev/null >/dev/null 2>&1'; setsid -f sh -c "$HOP" ${marks[2]} </dev/null >/dev/null 2>&1`)
  await until(() => marks.every((m) => withArg(m).length > 0), 10_000, 'the three jobs to run')
  return marks
}

/** Whether none of the processes carrying `marks` has run for a whole second (the hopper may be between generations at any one look). */
async function goneForGood(marks: string[]): Promise<boolean> {
  for (const stop = Date.now() + 1_000; Date.now() < stop; await sleep(20)) if (marks.some((m) => withArg(m).length > 0)) return false
  return true
}

t.test('each terminal has a cgroup of its own, under the bridge\'s part of the tree, which the shell account holds', { skip }, async (t) => {
  const cg = privateCgroup()
  const bridge = await cg.start()
  t.teardown(() => bridge.stop().then(cg.remove))
  const listening = bridge.logs.find((l) => l.event === 'bridge.listening')!
  const root = path.join(cg.dir, `playfield-terminal.${bridge.child.pid}`)
  t.same(listening.containment, { cgroup: root }, 'bridge.listening names the bridge\'s cgroup')
  t.equal(cgroupOf(bridge.child.pid!), path.join(cg.cgroup, `playfield-terminal.${bridge.child.pid}`, 'bridge'), 'the bridge runs in its bridge/ cgroup')
  t.equal(statSync(root).uid, uidOf(SHELL_USER), 'the tree belongs to the shell account')
  t.equal(statSync(path.join(root, 'cgroup.procs')).uid, uidOf(SHELL_USER), 'and so does its cgroup.procs, so a shell may move itself under it')
  const a = await shell(bridge.port)
  const b = await shell(bridge.port)
  t.equal((await a.run('cat /proc/self/cgroup')).split(/\r?\n/).find((l) => l.startsWith('0::')), `0::${path.join(cg.cgroup, `playfield-terminal.${bridge.child.pid}`, 't1')}`, 'the first shell\'s processes are in t1')
  await b.run('true')
  t.equal(cgroupOf(pidOf(b)), path.join(cg.cgroup, `playfield-terminal.${bridge.child.pid}`, 't2'), 'the second shell is in t2')
  t.same(readFileSync(path.join(root, 't2', 'cgroup.procs'), 'utf8').trim(), String(pidOf(b)), 'and it is all t2 holds')
  t.equal((await a.run('id -u')).trim(), String(uidOf(SHELL_USER)), 'the shell is still the shell account')
  a.ws.close()
  await until(() => !existsSync(path.join(root, 't1')), 10_000, 't1 to be removed')
  t.ok(existsSync(path.join(root, 't2')), 'the other terminal\'s cgroup stays')
  b.ws.close()
  await until(() => !existsSync(path.join(root, 't2')), 10_000, 't2 to be removed')
  t.same(readdirSync(root, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name), ['bridge'], 'no terminal\'s cgroup is left')
})

t.test('closing the socket ends a job that left the session, one that also ignores SIGHUP, and one that hops to a new session every 10 ms', { skip }, async (t) => {
  const cg = privateCgroup()
  const bridge = await cg.start()
  t.teardown(() => bridge.stop().then(cg.remove))
  const c = await shell(bridge.port)
  const marks = await escapees(c, `9${bridge.child.pid}1`)
  const shellSid = Number(readFileSync(`/proc/${pidOf(c)}/stat`, 'utf8').split(') ')[1]!.split(' ')[3])
  for (const pid of withArg(marks[0]!)) t.not(Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[3]), shellSid, 'the setsid job is not in the shell\'s session')
  c.ws.close()
  await until(() => marks.every((m) => withArg(m).length === 0), 10_000, 'every job to end')
  t.ok(await goneForGood(marks), 'none of them runs a second later: the hopper did not outrun the kill')
})

t.test('a kill frame ends the jobs that left the session too; the connection stays, and the next shell gets a new cgroup', { skip }, async (t) => {
  const cg = privateCgroup()
  const bridge = await cg.start()
  t.teardown(() => bridge.stop().then(cg.remove))
  const c = await shell(bridge.port)
  const marks = await escapees(c, `9${bridge.child.pid}2`)
  const from = c.frames.length
  c.send({ type: 'kill' })
  await c.frame('exit', from)
  await until(() => marks.every((m) => withArg(m).length === 0), 10_000, 'every job to end')
  t.ok(await goneForGood(marks), 'none of them runs a second later')
  t.equal(c.closed, null, 'the connection stays open')
  t.equal(await nextShellCgroup(c), path.join(cg.cgroup, `playfield-terminal.${bridge.child.pid}`, 't2'), 'the new shell is in t2')
})

/** A bridge started in `cg`, a job ignoring SIGHUP left by its terminal (its argument `mark`), then the bridge SIGKILLed: its tree is left. */
async function killedWithJob(cg: ReturnType<typeof privateCgroup>, tag: string): Promise<{ root: string; mark: string }> {
  const first = await cg.start()
  const c = await shell(first.port)
  const mark = `9${first.child.pid}${tag}`
  await c.run(`setsid -f sh -c 'trap "" HUP; exec sleep ${mark}' </dev/null >/dev/null 2>&1`)
  await until(() => withArg(mark).length > 0, 10_000, 'the job to run')
  await first.stop('SIGKILL')
  return { root: path.join(cg.dir, `playfield-terminal.${first.child.pid}`), mark }
}

t.test('a bridge killed outright leaves its terminals\' jobs; the next bridge to start there ends them and removes its tree', { skip }, async (t) => {
  const cg = privateCgroup()
  const { root, mark } = await killedWithJob(cg, '3')
  await sleep(500)
  t.equal(withArg(mark).length, 1, 'the job outlives the bridge, which had no chance to end it')
  t.ok(existsSync(root), 'and so does the dead bridge\'s tree')
  const second = await cg.start()
  t.teardown(() => second.stop().then(cg.remove))
  t.same(withArg(mark), [], 'the next bridge ended the job before it listened')
  t.notOk(existsSync(root), 'and removed the dead bridge\'s tree')
  t.ok(existsSync(path.join(cg.dir, `playfield-terminal.${second.child.pid}`)), 'its own is there')
})

function rssMiB(pid: number): number {
  return Number(/VmRSS:\s+([0-9]+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024
}

/** A `sleep` carrying `mark`, in `cgroup` (a directory) when given; killed at the test's end. */
function sleeper(t: Test, mark: string, cgroup?: string): number {
  const child = spawn('sleep', [mark], { stdio: 'ignore' })
  t.teardown(() => void child.kill('SIGKILL'))
  if (cgroup) writeFileSync(path.join(cgroup, 'cgroup.procs'), String(child.pid))
  return child.pid!
}

/**
 * A stand-in for a bridge's part of the tree, named for `pid`, in `cg`: an empty `bridge/`, and a
 * `t1` holding a job that carries `mark` (killed at the test's end).
 */
function standInTree(t: Test, cg: ReturnType<typeof privateCgroup>, pid: number, mark: string): string {
  const tree = path.join(cg.dir, `playfield-terminal.${pid}`)
  mkdirSync(path.join(tree, 'bridge'), { recursive: true })
  mkdirSync(path.join(tree, 't1'))
  sleeper(t, mark, path.join(tree, 't1'))
  return tree
}

t.test('a dead bridge\'s tree whose pid another process has taken since is swept all the same', { skip }, async (t) => {
  // Found in review: the sweep went by the pid in the name alone, and skipped such a tree for as
  // long as the process that took the pid lived.
  const cg = privateCgroup()
  const taker = sleeper(t, `9${process.pid}6`) // in this test's cgroup, where no bridge of cg's is
  const mark = `9${process.pid}7`
  const tree = standInTree(t, cg, taker, mark)
  t.equal(withArg(mark).length, 1, 'the left job runs')
  const bridge = await cg.start()
  t.teardown(() => bridge.stop().then(cg.remove))
  t.same(withArg(mark), [], 'the start ended the job')
  t.notOk(existsSync(tree), 'and removed the tree')
  t.ok(alive(taker), 'the process that has the pid now runs on')
})

t.test('a dead bridge\'s bridge/ that the shell account replaced, with a job moved into it, does not pass for a live bridge', { skip }, async (t) => {
  // Found in review: the account owns the tree, so after its bridge died it could remove the
  // empty bridge/, make its own, and move a job there; the sweep then took the tree for live.
  const cg = privateCgroup()
  const { root, mark } = await killedWithJob(cg, '4')
  const fake = path.join(root, 'bridge')
  await until(() => removeCgroupTree(fake), 5_000, 'the dead bridge\'s bridge/ to be removable')
  mkdirSync(fake)
  chownSync(fake, uidOf(SHELL_USER), uidOf(SHELL_USER))
  chownSync(path.join(fake, 'cgroup.procs'), uidOf(SHELL_USER), uidOf(SHELL_USER))
  const decoy = sleeper(t, `${mark}5`, fake)
  t.ok(readFileSync(path.join(fake, 'cgroup.events'), 'utf8').includes('populated 1'), 'the stand-in bridge/ is populated')
  const second = await cg.start()
  t.teardown(() => second.stop().then(cg.remove))
  t.same(withArg(mark), [], 'the next bridge ended the job')
  t.notOk(alive(decoy), 'and the process in the stand-in bridge/')
  t.notOk(existsSync(root), 'and removed the tree')
})

t.test('a dead bridge\'s tree does not pass for live because a process with its pid sits in it', { skip }, async (t) => {
  // Found in the second review: the account owns the tree's cgroup.procs, so a process of its own
  // that came by the dead bridge's pid could move into the tree and keep it from the sweep.
  const cg = privateCgroup()
  const holder = sleeper(t, `9${process.pid}10`)
  const mark = `9${process.pid}11`
  const tree = standInTree(t, cg, holder, mark)
  mkdirSync(path.join(tree, 'x'))
  writeFileSync(path.join(tree, 'x', 'cgroup.procs'), String(holder))
  const bridge = await cg.start()
  t.teardown(() => bridge.stop().then(cg.remove))
  t.same(withArg(mark), [], 'the start ended the left job')
  t.notOk(alive(holder), 'and the process in the tree that had the pid')
  t.notOk(existsSync(tree), 'and removed the tree')
})

t.test('a live bridge\'s tree is kept whatever its name\'s pid is here (another PID namespace)', { skip }, async (t) => {
  const cg = privateCgroup()
  // A pid no process has: one that has just exited and been collected.
  const gone = spawn('true')
  await new Promise((resolve) => gone.on('exit', resolve))
  const mark = `9${process.pid}9`
  const tree = standInTree(t, cg, gone.pid!, mark)
  const other = sleeper(t, `9${process.pid}8`, path.join(tree, 'bridge'))
  const bridge = await cg.start()
  t.teardown(() => bridge.stop().then(cg.remove))
  t.ok(alive(other), 'the other bridge runs on')
  t.equal(withArg(mark).length, 1, 'and so does its terminal\'s job')
  t.ok(existsSync(path.join(tree, 't1')), 'its tree is as it was')
  writeFileSync(path.join(tree, 'cgroup.kill'), '1')
  await until(() => removeCgroupTree(tree), 5_000, 'the stand-in tree to be removed')
})

t.test('no cgroup for a terminal (the tree is full): an error frame, no shell, and the connection stays', { skip }, async (t) => {
  const cg = privateCgroup()
  const bridge = await cg.start()
  t.teardown(() => bridge.stop().then(cg.remove))
  const root = path.join(cg.dir, `playfield-terminal.${bridge.child.pid}`)
  const first = await shell(bridge.port)
  // bridge/ and t1: the kernel refuses a third cgroup under the bridge's (EAGAIN).
  writeFileSync(path.join(root, 'cgroup.max.descendants'), '2')
  const c = await connect(bridge.port)
  c.send({ type: 'create' })
  t.match(await c.frame('error'), { type: 'error', message: 'the shell could not be started' })
  t.notOk(c.frames.some((f) => f.type === 'created'), 'no shell was started')
  await until(() => bridge.logs.some((l) => l.event === 'terminal.spawn_failed'), 5_000, 'the spawn_failed line')
  t.match(bridge.logs.find((l) => l.event === 'terminal.spawn_failed'), { user: 'dev', error: 'no cgroup for the terminal' })
  t.same(readdirSync(root, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name).sort(), ['bridge', 't1'], 'nothing was made for it')
  t.equal(c.closed, null, 'the connection stays')
  t.match(await first.run('echo still-$((1+1))'), /^still-2/, 'and the other terminal works on')
  writeFileSync(path.join(root, 'cgroup.max.descendants'), '257')
  t.equal(await nextShellCgroup(c), path.join(cg.cgroup, `playfield-terminal.${bridge.child.pid}`, 't3'), 'once there is room, the next create gets a shell in a cgroup of its own')
})

t.test('the tree is bounded where a shell cannot raise the bounds: 8 levels deep, 64 cgroups per allowed connection', { skip }, async (t) => {
  const cg = privateCgroup()
  const bridge = await cg.start({ TERMINAL_MAX_CONN: '2' })
  t.teardown(() => bridge.stop().then(cg.remove))
  const root = path.join(cg.dir, `playfield-terminal.${bridge.child.pid}`)
  t.equal(readFileSync(path.join(root, 'cgroup.max.depth'), 'utf8').trim(), '8')
  t.equal(readFileSync(path.join(root, 'cgroup.max.descendants'), 'utf8').trim(), '129', 'the bridge\'s own and 64 for each of the 2 connections')
  const c = await shell(bridge.port)
  const raise = await c.run(`echo max >${root}/cgroup.max.descendants 2>/dev/null && echo raised-count || echo refused-$((1+1)); echo max >${root}/cgroup.max.depth 2>/dev/null && echo raised-depth || echo refused-$((2+1))`)
  t.match(raise, /refused-2[\s\S]*refused-3/, 'the shell may raise neither')
  t.notMatch(raise, /raised/)
  t.equal(readFileSync(path.join(root, 'cgroup.max.descendants'), 'utf8').trim(), '129', 'the bound is as it was')
  // t1 is at depth 1: seven levels under it are the shell's, the eighth is refused.
  const t1 = path.join(root, 't1')
  t.match(await c.run(`mkdir -p ${t1}/a/b/c/d/e/f/g && echo made-$((3+4))`), /made-7/, 'seven levels under the terminal\'s cgroup')
  t.match(await c.run(`mkdir ${t1}/a/b/c/d/e/f/g/h 2>/dev/null || echo refused-$((4+4))`), /refused-8/, 'not eight')
  t.notOk(existsSync(path.join(t1, 'a/b/c/d/e/f/g/h')))
  // bridge/, t1 and its 7: 120 more fit in the 129, then the kernel refuses (EAGAIN).
  const made = Number((await c.run(`n=0; while mkdir ${t1}/w$n 2>/dev/null; do n=$((n+1)); done; echo count=$n`)).match(/count=(\d+)/)![1])
  t.equal(made, 120, 'the shell made cgroups up to the bound and no more')
  c.ws.close()
  await until(() => !existsSync(t1), 10_000, 't1 and all under it to be removed')
  const next = await shell(bridge.port)
  await next.run('true')
  t.equal(cgroupOf(pidOf(next)), path.join(cg.cgroup, `playfield-terminal.${bridge.child.pid}`, 't2'), 'and once they are gone, the next terminal has room again')
  next.ws.close()
})

/** A bridge of 2 connections in a private cgroup (129 cgroups in its tree), its tree's root, and a shell on it. */
async function twoConnectionBridge(t: Test): Promise<{ cg: ReturnType<typeof privateCgroup>; bridge: RunningProcess; root: string; c: TermClient }> {
  const cg = privateCgroup()
  const bridge = await cg.start({ TERMINAL_MAX_CONN: '2' })
  t.teardown(() => bridge.stop().then(cg.remove))
  return { cg, bridge, root: path.join(cg.dir, `playfield-terminal.${bridge.child.pid}`), c: await shell(bridge.port) }
}

t.test('cgroups a shell made beside the terminals\' own, filling the tree, are removed once empty when a terminal finds no room', { skip }, async (t) => {
  // Found in review: they were never removed, so the room they took was gone until a restart.
  const { cg, bridge, root, c } = await twoConnectionBridge(t)
  // Of the 129, bridge/ and t1 are taken: a t9 (a name a terminal may get later) and 126 more fit.
  const refusedAt = Number((await c.run(`mkdir ${root}/t9; n=1; while mkdir ${root}/x$n 2>/dev/null; do n=$((n+1)); done; echo refused=$n`)).match(/refused=(\d+)/)![1])
  t.equal(refusedAt, 127, 'the shell filled the tree')
  const next = await shell(bridge.port)
  await next.run('true')
  t.equal(cgroupOf(pidOf(next)), path.join(cg.cgroup, `playfield-terminal.${bridge.child.pid}`, 't2'), 'the next terminal got a cgroup')
  t.same(readdirSync(root, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name).sort(), ['bridge', 't1', 't2'], 'the shell\'s empty cgroups were removed, its t9 among them')
  t.match(await c.run('echo still-$((2+5))'), /^still-7/, 'the first terminal works on')
  c.ws.close()
  next.ws.close()
})

t.test('cgroups a shell made under the names the next terminals would get, filling the tree, are taken back once empty', { skip }, async (t) => {
  // Found in the second review: a name taken was skipped, and cgroups under skipped names were never removed.
  const { cg, bridge, root, c } = await twoConnectionBridge(t)
  const refusedAt = Number((await c.run(`n=2; while mkdir ${root}/t$n 2>/dev/null; do n=$((n+1)); done; echo refused=$n`)).match(/refused=(\d+)/)![1])
  t.equal(refusedAt, 129, 'the shell filled the tree with t2 to t128')
  const next = await shell(bridge.port)
  await next.run('true')
  t.equal(cgroupOf(pidOf(next)), path.join(cg.cgroup, `playfield-terminal.${bridge.child.pid}`, 't2'), 'the next terminal got t2, taken back')
  next.ws.close()
  c.ws.close()
  await until(() => !existsSync(path.join(root, 't1')) && !existsSync(path.join(root, 't2')), 10_000, 't1 and t2 to be removed')
  const third = await shell(bridge.port)
  await third.run('true')
  t.equal(cgroupOf(pidOf(third)), path.join(cg.cgroup, `playfield-terminal.${bridge.child.pid}`, 't3'), 'and the one after t3')
  third.ws.close()
})

t.test('a job a shell put in a cgroup of its own under its terminal\'s ends with the terminal too, and a name a shell took is skipped or taken back', { skip }, async (t) => {
  // Found in review: only the terminal's own cgroup.procs was read, and cgroup.kill was written only
  // when something was left there, so a job in t1/sub outlived its terminal, and t1 stayed.
  const cg = privateCgroup()
  const bridge = await cg.start()
  t.teardown(() => bridge.stop().then(cg.remove))
  const root = path.join(cg.dir, `playfield-terminal.${bridge.child.pid}`)
  const c = await shell(bridge.port)
  const t1 = path.join(root, 't1')
  const mark = `9${bridge.child.pid}5`
  await c.run(`mkdir ${t1}/sub && setsid -f sh -c 'echo $$ >${t1}/sub/cgroup.procs; trap "" HUP; exec sleep ${mark}' </dev/null >/dev/null 2>&1`)
  await until(() => withArg(mark).length > 0, 10_000, 'the job to run')
  t.equal(cgroupOf(withArg(mark)[0]!), path.join(cg.cgroup, `playfield-terminal.${bridge.child.pid}`, 't1', 'sub'), 'the job is in t1/sub')
  // The tree is the shell account's: a shell may take the names the next terminals would get.
  // One with a process in it is skipped; an empty one is taken back.
  const squatter = `9${bridge.child.pid}6`
  await c.run(`mkdir ${root}/t2 ${root}/t3 && setsid -f sh -c 'echo $$ >${root}/t2/cgroup.procs; exec sleep ${squatter}' </dev/null >/dev/null 2>&1`)
  await until(() => withArg(squatter).length > 0 && cgroupOf(withArg(squatter)[0]!).endsWith('/t2'), 10_000, 'the squatter to be in t2')
  const next = await shell(bridge.port)
  await next.run('true')
  t.equal(cgroupOf(pidOf(next)), path.join(cg.cgroup, `playfield-terminal.${bridge.child.pid}`, 't3'), 'the next terminal gets t3, not a refusal')
  t.equal(withArg(squatter).length, 1, 'and the process in t2 was left alone')
  writeFileSync(path.join(root, 't2', 'cgroup.kill'), '1')
  c.ws.close()
  await until(() => withArg(mark).length === 0, 10_000, 'the job in t1/sub to end')
  t.ok(await goneForGood([mark]), 'and it stays gone')
  await until(() => !existsSync(t1), 10_000, 't1 and t1/sub to be removed')
  t.pass('t1 and its sub-cgroup removed')
  next.ws.close()
})

t.test('a writer that left its terminal keeps flooding the PTY after the shell ends: a client that neither acks nor reads costs bounded memory, and exit comes once it reads', { skip }, async (t) => {
  // Found in review: once the shell had ended, the PTY was no longer paused for the socket either,
  // and a process that had left the session and the cgroup (the tree is the shell account's) grew
  // the bridge by 150 MiB in 3 s for a client that read nothing.
  const cg = privateCgroup()
  const bridge = await cg.start()
  t.teardown(() => bridge.stop().then(cg.remove))
  const root = path.join(cg.dir, `playfield-terminal.${bridge.child.pid}`)
  const escape = path.join(root, 'esc')
  t.teardown(async () => {
    writeFileSync(path.join(escape, 'cgroup.kill'), '1')
    await until(() => removeCgroupTree(escape), 5_000, 'the escaped writer\'s cgroup to go')
  })
  const c = await shell(bridge.port)
  await c.run('true')
  c.send({ type: 'ack', bytes: c.output.length })
  const from = c.frames.length
  c.send({ type: 'input', data: `mkdir ${escape}; setsid sh -c 'echo $$ >${escape}/cgroup.procs; sleep 1; exec yes "$(printf "%0100d" 0)"' & exec true\r` })
  const before = rssMiB(bridge.child.pid!)
  c.ws.pause()
  let peak = before
  // The shell ends at once, the writer starts a second later, and an ended terminal's PTY is
  // closed 3 s after its shell when nothing holds it: 5 s covers the flood.
  for (let i = 0; i < 50; i++) {
    await sleep(100)
    peak = Math.max(peak, rssMiB(bridge.child.pid!))
  }
  t.ok(peak - before < 20, `the bridge grew ${(peak - before).toFixed(1)} MiB in 5 s for a client that read nothing`)
  c.ws.resume()
  const exit = await c.frame('exit', from, 20_000)
  t.same(exit, { type: 'exit', code: 0, signal: null }, 'once it reads, the rest comes and then exit')
  t.equal(c.closed, null, 'and the connection stays')
})

t.test('a bridge that may make no cgroup says why, and its terminals still end by their session', { skip: process.getuid?.() === 0 ? false : 'needs root' }, async (t) => {
  // Started as the shell account itself: no write access where a root bridge would make its tree.
  const shellUid = String(uidOf(SHELL_USER))
  const bridge = await startPlatform({
    // env -u: the test runner's NODE_OPTIONS preload writes to its own root-owned files at exit.
    command: ['env', '-u', 'NODE_OPTIONS', 'setpriv', `--reuid=${shellUid}`, `--regid=${shellUid}`, '--clear-groups', '--', process.execPath, BRIDGE_JS],
    readyEvent: 'bridge.listening',
    env: { TERMINAL_PORT: '0', TERMINAL_TICKET_SECRET: TICKET_SECRET, PLATFORM_ORIGINS: ORIGIN, TERMINAL_ACCESS_CHECK_S: '0' },
  })
  t.teardown(() => bridge.stop())
  const containment = bridge.logs.find((l) => l.event === 'bridge.listening')!.containment as { cgroup: null; reason: string }
  t.equal(containment.cgroup, null)
  t.match(containment.reason, skip ? /\S/ : /^cannot make a cgroup in \/.* \(EACCES\)$/, 'the reason names what was in the way')
  const c = await shell(bridge.port)
  const bg = Number((await c.run('(trap "" HUP; exec sleep 1030) & echo $!')).trim().split(/\s+/).pop())
  t.ok(alive(bg), 'a job runs')
  c.ws.close()
  await until(() => !alive(bg) && !alive(pidOf(c)), 10_000, 'the session to end')
  t.pass('the shell and its job ignoring SIGHUP ended by the session kill')
})
