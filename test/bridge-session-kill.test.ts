import { execFileSync, spawn } from 'node:child_process'
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { endSession, KILL_GRACE_MS } from '../lib/bridge/session-kill.js'

/** A session led by a bash running `script`, and how it ended. */
function session(script: string): { pid: number; ended: Promise<NodeJS.Signals | null> } {
  // detached: the child calls setsid, so it leads a session of its own as the login shell does.
  const child = spawn('/bin/bash', ['-c', script], { detached: true, stdio: 'ignore' })
  const ended = new Promise<NodeJS.Signals | null>((resolve) => child.once('exit', (_code, signal) => resolve(signal)))
  return { pid: child.pid!, ended }
}


/** Processes of session `sid` that have not ended (zombies have), as `ps` lists them. */
function alive(sid: number): string[] {
  let out = ''
  try {
    out = execFileSync('ps', ['-s', String(sid), '-o', 'pid=,stat=,args='], { encoding: 'utf8' })
  } catch {
    return [] // ps exits 1 when the session has no process at all
  }
  return out.split('\n').map((l) => l.trim()).filter((l) => l && !/^\d+ Z/.test(l))
}

/** What is left of the session once a SIGKILL sent just now has had time to take effect (up to 10 s on a loaded machine). */
async function left(sid: number): Promise<string[]> {
  for (const stop = Date.now() + 10_000; alive(sid).length > 0 && Date.now() < stop; ) await sleep(50)
  return alive(sid)
}

/**
 * Until the session runs `args`: a command the script starts after its trap, so the trap is set.
 * A fixed pause was not enough on a loaded machine: a SIGHUP before `trap "" HUP` ran ended bash
 * at once, and the test saw SIGHUP where it expected SIGKILL.
 */
async function runs(sid: number, args: RegExp): Promise<void> {
  for (const stop = Date.now() + 10_000; !alive(sid).some((l) => args.test(l)) && Date.now() < stop; ) await sleep(20)
}

t.test('a process that lets one SIGHUP pass gets another before the SIGKILL', async (t) => {
  // The first SIGHUP only resets the trap, as a lost SIGHUP leaves bash waiting for input.
  const s = session('trap "trap - HUP" HUP; while :; do sleep 0.05; done')
  await runs(s.pid, /\bsleep 0\.05$/)
  t.ok(alive(s.pid).length >= 1, 'the session runs')
  await endSession(s.pid)
  t.equal(await s.ended, 'SIGHUP', 'ended by a second SIGHUP, not by the SIGKILL')
  t.same(await left(s.pid), [], 'nothing of the session is left')
})

t.test('a process that ignores SIGHUP gets SIGKILL once the grace is over, and every member of the session ends', async (t) => {
  const s = session('trap "" HUP; sleep 1000 & while :; do sleep 0.05; done')
  await runs(s.pid, /\bsleep 0\.05$/)
  const started = Date.now()
  await endSession(s.pid, 500)
  t.equal(await s.ended, 'SIGKILL')
  t.ok(Date.now() - started >= 500, 'not before the grace was over')
  t.same(await left(s.pid), [], 'the background sleep, which ignores SIGHUP too, is gone as well')
})

t.test('a stopped process gets SIGCONT with its SIGHUP, so its handler runs and it ends by it, not by the SIGKILL', async (t) => {
  // A job stopped with Ctrl-Z that saves its work on a hang-up (an editor): stopped, it would not
  // run its handler until the SIGKILL.
  const s = session('trap "exit 0" HUP; kill -STOP $$; while :; do sleep 0.05; done')
  for (const stop = Date.now() + 10_000; !alive(s.pid).some((l) => /^\d+ T/.test(l)) && Date.now() < stop; ) await sleep(20)
  t.match(alive(s.pid), [/^\d+ T/], 'the session leader is stopped')
  await endSession(s.pid, 1_000)
  t.equal(await s.ended, null, 'it exited by its handler (exit 0), not killed')
  t.same(await left(s.pid), [], 'nothing of the session is left')
})

t.test('the grace between SIGHUP and SIGKILL is the 2 s the terminal issue gives (the other tests pass their own)', async (t) => {
  t.equal(KILL_GRACE_MS, 2_000)
})
