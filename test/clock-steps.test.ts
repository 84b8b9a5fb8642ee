import t from 'tap'
import { chmodSync, existsSync, readdirSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { Client, startPlatform, tempDir } from './helpers/platform.js'
import { connect, ORIGIN, startBridge } from './helpers/terminal.js'

// A wall clock stepped back while the product runs (an NTP step, a VM resumed): what counts time
// in memory uses the monotonic clock, and what is stamped on the wall clock copes with stamps
// from the future. libfaketime (Debian's faketime, which .ci/run installs) moves the wall clock of
// both processes each time they read it from the file below; their monotonic clock runs on.
const LIBFAKETIME = readdirSync('/usr/lib', { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => path.join('/usr/lib', entry.name, 'faketime/libfaketime.so.1'))
  .find((file) => existsSync(file))

const PASSWORD = 'correct horse battery'

t.test('a wall clock stepped back an hour locks no one out of launches, sign-in or the terminal', { skip: LIBFAKETIME ? false : 'needs libfaketime (Debian package faketime)' }, async (t) => {
  // Readable by all: a root bridge reads it as TERMINAL_USER once it has dropped root.
  const clockDir = tempDir()
  chmodSync(clockDir, 0o755)
  const clockFile = path.join(clockDir, 'clock')
  writeFileSync(clockFile, '+0\n', { mode: 0o644 })
  const faked = { LD_PRELOAD: LIBFAKETIME, FAKETIME_TIMESTAMP_FILE: clockFile, FAKETIME_NO_CACHE: '1', FAKETIME_DONT_FAKE_MONOTONIC: '1' }
  const dataDir = tempDir()
  const bridge = await startBridge({ DATA_DIR: dataDir, TERMINAL_TICKET_SECRET: undefined, ...faked })
  t.teardown(() => bridge.stop())
  const platform = await startPlatform({ dataDir, env: { TERMINAL_PORT: String(bridge.port), DEV_ACCESS_ALL: 'true', ...faked } })
  t.teardown(() => platform.stop())

  const player = new Client(platform.url, ORIGIN)
  t.equal((await player.post('/api/auth/register', { username: 'clockwise', password: PASSWORD })).status, 200)
  const { games } = (await (await player.get('/api/games')).json()) as { games: { id: string }[] }
  const launch = (): Promise<number> => player.post(`/api/games/${games[0]!.id}/launch`).then((res) => res.status)
  const login = (password: string): Promise<Response> => new Client(platform.url, ORIGIN).post('/api/auth/login', { username: 'clockwise', password })

  // Before the step: the launch burst spent, and ten wrong passwords from this address.
  // Bursts of 50 at once until one is refused: a loaded machine may answer 50 slower than the
  // limit refills (20 a second past the burst of 40).
  let refusedLaunch = false
  for (let burst = 0; burst < 20 && !refusedLaunch; burst++) refusedLaunch = (await Promise.all(Array.from({ length: 50 }, launch))).includes(429)
  t.ok(refusedLaunch, 'launches at once past the burst: 429')
  for (let i = 0; i < 10; i++) t.equal((await login('wrong password')).status, 401)
  const limited = await login(PASSWORD)
  t.equal(limited.status, 429, 'the eleventh sign-in waits')
  t.ok(Number(limited.headers.get('retry-after')) <= 60, 'for the rest of the minute')

  writeFileSync(clockFile, '-1h\n')
  await sleep(200)
  const health = (await (await fetch(`http://127.0.0.1:${bridge.port}/`)).json()) as { uptime: number }
  t.ok(health.uptime >= 0 && health.uptime < 600, `the bridge's uptime is still its time since start (${health.uptime} s)`)
  t.equal(await launch(), 200, 'launches refilled on the monotonic clock: not locked for the hour')
  const signIn = await login(PASSWORD)
  t.equal(signIn.status, 200, `sign-in: failures stamped an hour ahead do not limit for the hour (${signIn.headers.get('retry-after')})`)
  const ticket = await player.post('/dev/terminal/ticket')
  t.equal(ticket.status, 200)
  const terminal = await connect(bridge.port, { ticket: ((await ticket.json()) as { ticket: string }).ticket })
  t.teardown(() => terminal.ws.terminate())
  t.equal(terminal.ws.readyState, terminal.ws.OPEN, 'a ticket minted after the step is not taken for one minted before the bridge started')
})
