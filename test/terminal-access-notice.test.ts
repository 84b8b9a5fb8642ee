import t from 'tap'
import { accessChangedCredential, bridgeCredential } from '../lib/ticket.js'
import { expectError } from './helpers/accounts.js'
import { Client, freePort, runUsers, runUsersOk, startPlatform, tempDir, type RunningProcess } from './helpers/platform.js'
import { alive, openTerminalAt, ORIGIN, signInAt, startBridge, TICKET_SECRET, until, type TermClient } from './helpers/terminal.js'

// A logout and a revoke tell the bridge (POST /access-changed), which checks its open terminals at
// once (README "Access"). The bridge's own checks come once an hour here, so
// every close below is the notice's doing. A real platform and a real bridge, each knowing the
// other's port.

const SESSION_SECRET = 'test-session-secret-0123456789abcdef-0123456789'
const dataDir = tempDir()
const platformPort = await freePort()
const bridge = await startBridge({ DATA_DIR: dataDir, PORT: String(platformPort), TERMINAL_ACCESS_CHECK_S: '3600' })
const platformEnv = { PORT: String(platformPort), TERMINAL_PORT: String(bridge.port), TERMINAL_TICKET_SECRET: TICKET_SECRET, SESSION_SECRET, PLATFORM_ORIGINS: ORIGIN }
/** What `bin/platform users` gets: the platform's environment, as README "Roles" runs it. */
const usersEnv = { DATA_DIR: dataDir, TERMINAL_PORT: String(bridge.port), TERMINAL_TICKET_SECRET: TICKET_SECRET, SESSION_SECRET }
const platform: RunningProcess = await startPlatform({ dataDir, env: platformEnv })
t.teardown(async () => {
  await platform.stop()
  await bridge.stop()
})
const base = `http://127.0.0.1:${platformPort}`
/** Far under the hour between the bridge's own checks, and long enough for a loaded machine. */
const WAIT_MS = 10_000

const signIn = (name: string, register = true): Promise<Client> => signInAt(base, name, register)
/** A developer's terminal opened with a ticket `client` got from the platform, its shell running. */
const openTerminal = (client: Client): Promise<{ term: TermClient; pid: number }> => openTerminalAt(bridge.port, client)

const accessChecks = (): number => platform.logs.filter((l) => l.event === 'http.request' && l.path === '/dev/terminal/access' && l.status === 200).length

/**
 * Open two terminals, and the count of checks once both admissions' log lines are in: the
 * platform writes its log a moment after it answers, and a loaded machine can show the shells
 * before those lines (counted later, they were taken for the notice's checks).
 */
async function openedTwo(open: () => Promise<[Terminal, Terminal]>): Promise<{ terminals: [Terminal, Terminal]; checks: number }> {
  const checks = accessChecks() + 2
  const terminals = await open()
  await until(() => accessChecks() >= checks, WAIT_MS, 'both admissions to be logged')
  return { terminals, checks }
}
type Terminal = Awaited<ReturnType<typeof openTerminal>>

/** POST /access-changed on the bridge, as the platform sends it. */
function notice(headers: Record<string, string> = { authorization: `Bearer ${accessChangedCredential([TICKET_SECRET])}` }, method = 'POST'): Promise<Response> {
  return fetch(`${bridge.url}/access-changed`, { method, headers })
}

t.test('a revoke ends the open terminal at once, and the others are checked and stay', async (t) => {
  const dev = await signIn('notice_revoked')
  const other = await signIn('notice_other')
  await runUsersOk(usersEnv, 'grant', 'notice_revoked', 'developer')
  await runUsersOk(usersEnv, 'grant', 'notice_other', 'developer')
  const before = await openedTwo(async () => [await openTerminal(dev), await openTerminal(other)])
  const [leaving, staying] = before.terminals
  const started = Date.now()
  const revoke = await runUsers(usersEnv, 'revoke', 'notice_revoked', 'developer')
  const done = Date.now()
  t.equal(revoke.code, 0)
  t.match(revoke.stdout, /^revoked developer from notice_revoked\n/, 'the command says what it did, as before')
  t.same(await leaving.term.whenClosed(WAIT_MS), { code: 1008, reason: 'access ended: developer access revoked' })
  const closed = Date.now()
  t.ok(closed - started < WAIT_MS, `closed ${closed - started} ms after the command started (${done - started} ms to run it), ${closed - done} ms after it ended: not at the hourly check`)
  await until(() => !alive(leaving.pid), WAIT_MS, 'the shell to end')
  await until(() => accessChecks() >= before.checks + 2, WAIT_MS, 'both terminals to have been checked')
  t.equal(staying.term.closed, null, 'the other developer\'s terminal was checked and stays open')
  t.match(await staying.term.run('echo still-here'), /^still-here/)
  staying.term.ws.close()
})

t.test('a logout ends the terminals of its session at once, not those of another session of the user', async (t) => {
  const laptop = await signIn('notice_logout')
  await runUsersOk(usersEnv, 'grant', 'notice_logout', 'developer')
  const desktop = await signIn('notice_logout', false)
  const before = await openedTwo(async () => [await openTerminal(laptop), await openTerminal(desktop)])
  const [leaving, staying] = before.terminals
  t.equal((await laptop.post('/api/auth/logout')).status, 200)
  t.same(await leaving.term.whenClosed(WAIT_MS), { code: 1008, reason: 'access ended: signed out' })
  await until(() => !alive(leaving.pid), WAIT_MS, 'its shell to end')
  await until(() => accessChecks() >= before.checks + 2, WAIT_MS, 'both terminals to have been checked')
  t.equal(staying.term.closed, null, 'the other session\'s terminal stays')
  // A logout without a session tells the bridge nothing: no session of anyone ended.
  const checks = accessChecks()
  t.equal((await new Client(base, ORIGIN).post('/api/auth/logout')).status, 200)
  await new Promise((resolve) => setTimeout(resolve, 1_500))
  t.equal(accessChecks(), checks, 'no checks for a logout that ended nothing')
  staying.term.ws.close()
})

t.test('the bridge takes a notice only with the platform\'s credential, and a burst of them is one round of checks a second', async (t) => {
  await expectError(t, await notice({}), 403, 'FORBIDDEN', 'no credential')
  await expectError(t, await notice({ authorization: `Bearer ${accessChangedCredential(['another-secret-0123456789abcdef-0123456789'])}` }), 403, 'FORBIDDEN', 'another secret\'s')
  await expectError(t, await notice({ authorization: `Bearer ${bridgeCredential([TICKET_SECRET])}` }), 403, 'FORBIDDEN', 'the bridge\'s own credential is not the platform\'s')
  await expectError(t, await notice({ authorization: `Basic ${accessChangedCredential([TICKET_SECRET])}` }), 403, 'FORBIDDEN', 'not a bearer')
  const get = await notice(undefined, 'GET')
  t.equal(get.status, 405)
  t.equal(get.headers.get('allow'), 'POST')
  t.same(await get.json(), { error: 'method not allowed', code: 'METHOD_NOT_ALLOWED' })
  const dev = await signIn('notice_burst')
  await runUsersOk(usersEnv, 'grant', 'notice_burst', 'developer')
  const { term } = await openTerminal(dev)
  // Past the last round's second, so the first notice starts one at once.
  await new Promise((resolve) => setTimeout(resolve, 1_100))
  const before = accessChecks()
  const answers = await Promise.all(Array.from({ length: 5 }, () => notice()))
  for (const res of answers) {
    t.equal(res.status, 202)
    t.same(await res.json(), { success: true })
  }
  await until(() => accessChecks() >= before + 2, WAIT_MS, 'a round now and one a second later')
  await new Promise((resolve) => setTimeout(resolve, 2_000))
  t.equal(accessChecks(), before + 2, 'five notices, two rounds: one at once, one for those that came during it')
  t.equal(term.closed, null, 'still admitted, still open')
  term.ws.close()
})
