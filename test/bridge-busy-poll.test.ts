import { readFileSync } from 'node:fs'
import { performance } from 'node:perf_hooks'
import t from 'tap'
import { BusyPoll } from '../lib/bridge/busy-poll.js'
import { connect, startBridge } from './helpers/terminal.js'

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

/**
 * The share of `ms` the event loop spent outside epoll_wait: near 1 while it polls (epoll is asked
 * with a zero timeout and returns at once), near 0 while it sleeps between timers. Time the process
 * waits for a CPU counts as busy, so a loaded machine does not make a polling loop look asleep.
 */
async function utilization(ms: number): Promise<number> {
  const start = performance.eventLoopUtilization()
  await sleep(ms)
  return performance.eventLoopUtilization(start).utilization
}

async function until(check: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms
  while (!check() && Date.now() < deadline) await sleep(5)
  return check()
}

t.test('after input the loop polls instead of sleeping, for the window', async (t) => {
  t.ok((await utilization(100)) < 0.5, 'an idle loop sleeps')
  const poll = new BusyPoll(1_000, 1_000)
  poll.touch()
  t.equal(poll.polling, true, 'polling from the touch')
  t.ok((await utilization(100)) > 0.9, 'the loop does not sleep within the window')
  t.ok(await until(() => !poll.polling, 5_000), 'polling ends once the window has passed')
  t.ok((await utilization(100)) < 0.5, 'and the loop sleeps again')
})

t.test('each input starts the window again', async (t) => {
  const poll = new BusyPoll(300, 1000)
  const started = performance.now()
  let stayed = true
  // Touched every 50 ms for 600 ms: a window of 300 ms from the first touch alone would have ended.
  while (performance.now() - started < 600) {
    poll.touch()
    await sleep(50)
    stayed &&= poll.polling
  }
  t.ok(stayed, 'still polling 600 ms after the first touch')
  t.ok(await until(() => !poll.polling, 5_000), 'and it ends after the last window')
})

t.test('polling takes at most its budget of each second', async (t) => {
  const poll = new BusyPoll(5_000, 50)
  poll.touch()
  t.ok(await until(() => !poll.polling, 4_000), 'the budget ends polling long before the 5 s window')
  poll.touch()
  t.equal(poll.polling, false, 'more input within that second does not start it again')
  await sleep(1_000)
  poll.touch()
  t.equal(poll.polling, true, 'a new second brings a new budget')
  t.ok(await until(() => !poll.polling, 4_000), 'which ends it again')
})

t.test('a window of 0 turns busy polling off', async (t) => {
  const poll = new BusyPoll(0)
  poll.touch()
  t.equal(poll.polling, false, 'not polling')
  t.ok((await utilization(100)) < 0.5, 'the loop sleeps')
})

/** How many of 10 looks, 2 ms apart, find the process running or runnable (R), not asleep. */
async function running(pid: number): Promise<number> {
  let seen = 0
  for (let i = 0; i < 10; i++) {
    if (readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.startsWith('R')) seen++
    await sleep(2)
  }
  return seen
}

t.test('the bridge polls after an input frame, for TERMINAL_BUSY_POLL_US, and sleeps when it is 0', async (t) => {
  for (const [window, polls] of [['100000', true], ['0', false]] as const) {
    const bridge = await startBridge({ TERMINAL_BUSY_POLL_US: window })
    t.teardown(() => bridge.stop())
    const pid = bridge.child.pid!
    const c = await connect(bridge.port)
    c.send({ type: 'create' })
    await c.frame('created')
    await c.run('true')
    await sleep(600)
    t.ok((await running(pid)) <= 3, `window ${window}: the bridge sleeps while no input comes`)
    // Looked at once the echo is back: the frame's own work is done, the window is not over.
    c.output = ''
    c.send({ type: 'input', data: 'x' })
    await c.until(() => c.output.includes('x'), 5_000, 'the echo')
    const seen = await running(pid)
    if (polls) t.ok(seen >= 7, `window ${window}: running in ${seen} of 10 looks after the echo, within the window`)
    else t.ok(seen <= 3, `window ${window}: asleep after the echo (running in ${seen} of 10 looks)`)
    c.ws.close()
    await c.whenClosed()
  }
})
