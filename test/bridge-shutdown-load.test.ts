import t from 'tap'
import { alive, connect, startBridge, type TermClient } from './helpers/terminal.js'

// Found by a robustness audit: every ending session scanned all of /proc on its own, 20 times a
// second, synchronously. SIGTERM with 64 live shells (each with a job that ignores SIGHUP, so
// every session lasts its whole kill grace) and floods in progress held the event loop with those reads, and the bridge
// exited after about 7 s, past the 5 s of CONTRACT §6 (its own 4.5 s deadline timer fired late).
t.test('SIGTERM with 64 live sessions, floods in progress and jobs that ignore SIGHUP: 1001 to all, every process ended, exit 0 within 5 s', async (t) => {
  const bridge = await startBridge({ TERMINAL_MAX_CONN: '64' })
  const clients: TermClient[] = await Promise.all(Array.from({ length: 64 }, () => connect(bridge.port)))
  for (const c of clients) c.send({ type: 'create' })
  await Promise.all(clients.map((c) => c.frame('created')))
  const jobs = await Promise.all(clients.map(async (c) => Number((await c.run('(trap "" HUP; exec sleep 1004) & echo $!')).trim().split(/\s+/).pop())))
  const shells = clients.map((c) => c.frames.find((f) => f.type === 'created')!.pid as number)
  t.ok(jobs.every((pid) => pid > 0 && alive(pid)), 'every job runs')
  // And floods in progress: half the shells print without end, the other half run a printing loop that ignores SIGHUP.
  clients.forEach((c, i) => c.send({ type: 'input', data: i % 2 ? 'yes flood\r' : '(trap "" HUP; while :; do echo x; done) & sleep 1005\r' }))
  await new Promise((r) => setTimeout(r, 1_500))
  const started = Date.now()
  const exited = await bridge.stop('SIGTERM')
  const took = Date.now() - started
  t.ok(took < 5_000, `exited within 5 s (took ${took} ms)`)
  t.same(exited, { code: 0, signal: null })
  for (const c of clients) t.equal((await c.whenClosed()).code, 1001)
  t.same([...shells, ...jobs].filter(alive), [], 'every shell and job ended')
})
