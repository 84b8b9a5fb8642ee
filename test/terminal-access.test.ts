import http from 'node:http'
import { setTimeout as sleep } from 'node:timers/promises'
import t, { type Test } from 'tap'
import { accessChangedCredential, accessProof, bridgeCredential, isAccessProof, mintTicket } from '../lib/ticket.js'
import { sealKeys, sealReference, unseal } from '../lib/platform/seal.js'
import { namedByDevAccess } from '../lib/platform/dev-gate.js'
import type { App } from '../lib/platform/app.js'
import { expectError } from './helpers/accounts.js'
import { Client, freePort, runUsersOk, startPlatform, tempDir, type RunningProcess } from './helpers/platform.js'
import { alive, connect, openTerminalAt, ORIGIN, signInAt, startBridge, TICKET_SECRET, until, upgradeStatus, type TermClient } from './helpers/terminal.js'

// An open terminal ends once its user would no longer get its ticket (README "Access"):
// the bridge asks the platform every TERMINAL_ACCESS_CHECK_S (1 s here) with the ticket it was
// opened with. A real platform and a real bridge, each knowing the other's port.

const SESSION_SECRET = 'test-session-secret-0123456789abcdef-0123456789'
const CHECK_S = 1
const dataDir = tempDir()
const platformPort = await freePort()
const bridge = await startBridge({ DATA_DIR: dataDir, PORT: String(platformPort), TERMINAL_ACCESS_CHECK_S: String(CHECK_S) })
const platformEnv = { PORT: String(platformPort), TERMINAL_PORT: String(bridge.port), TERMINAL_TICKET_SECRET: TICKET_SECRET, SESSION_SECRET, PLATFORM_ORIGINS: ORIGIN }
let platform: RunningProcess = await startPlatform({ dataDir, env: platformEnv })
t.teardown(async () => {
  await platform.stop()
  await bridge.stop()
})
const base = `http://127.0.0.1:${platformPort}`

const signIn = (name: string, register = true): Promise<Client> => signInAt(base, name, register)
/** A developer's terminal opened with a ticket `client` got from the platform, its shell running. */
const openTerminal = (client: Client): Promise<{ term: TermClient; pid: number }> => openTerminalAt(bridge.port, client)

const accessChecks = (): number => platform.logs.filter((l) => l.event === 'http.request' && l.path === '/dev/terminal/access' && l.status === 200).length
/** Long enough for a check or two on a loaded machine; the checks come every CHECK_S. */
const WAIT_MS = 15_000

t.test('a revoked role ends an open terminal: 1008 with the reason, the shell ended, logged', async (t) => {
  const dev = await signIn('access_revoked')
  await runUsersOk({ DATA_DIR: dataDir }, 'grant', 'access_revoked', 'developer')
  const { term, pid } = await openTerminal(dev)
  const before = accessChecks()
  await until(() => accessChecks() >= before + 2, WAIT_MS, 'two access checks')
  t.equal(term.closed, null, 'checked twice while the role held, and left open')
  t.match(await term.run('echo still-here'), /^still-here/)
  await runUsersOk({ DATA_DIR: dataDir }, 'revoke', 'access_revoked', 'developer')
  t.same(await term.whenClosed(WAIT_MS), { code: 1008, reason: 'access ended: developer access revoked' })
  await until(() => !alive(pid), WAIT_MS, 'the shell to end')
  t.notOk(alive(pid), 'the shell was ended')
  // The bridge's log lines reach this process through a pipe, a moment after the close.
  const sessionLine = (): boolean => bridge.logs.some((l) => l.event === 'terminal.session' && l.user === 'access_revoked' && l.pid === pid)
  await until(sessionLine, WAIT_MS, 'its session line')
  t.ok(sessionLine(), 'its session line')
  t.match(bridge.logs.filter((l) => l.event === 'terminal.access_ended'), [{ event: 'terminal.access_ended', user: 'access_revoked', reason: 'developer access revoked' }])
  await expectError(t, await dev.post('/dev/terminal/ticket'), 403, 'FORBIDDEN', 'and no new ticket')
})

t.test('a logout ends the terminals opened in that session, not those of another session of the same user', async (t) => {
  const laptop = await signIn('access_logout')
  await runUsersOk({ DATA_DIR: dataDir }, 'grant', 'access_logout', 'developer')
  const desktop = await signIn('access_logout', false)
  const leaving = await openTerminal(laptop)
  const staying = await openTerminal(desktop)
  // The cookie moves on to refreshed tokens of the session; the ticket keeps the one it was minted with.
  t.equal((await laptop.get('/api/auth/backend-token')).status, 200)
  t.equal((await laptop.post('/api/auth/logout')).status, 200)
  t.same(await leaving.term.whenClosed(WAIT_MS), { code: 1008, reason: 'access ended: signed out' })
  await until(() => !alive(leaving.pid), WAIT_MS, 'its shell to end')
  t.notOk(alive(leaving.pid), 'its shell was ended')
  const before = accessChecks()
  await until(() => accessChecks() >= before + 2, WAIT_MS, 'two more access checks')
  t.equal(staying.term.closed, null, "the other session's terminal stays open")
  t.match(await staying.term.run('echo other-session'), /^other-session/)
  staying.term.ws.close()
  await staying.term.whenClosed()
})

t.test('a ticket minted before a revoke, or before its session\'s logout, opens nothing: 403 at the upgrade, logged, nothing spawned', async (t) => {
  // Found by a security audit: such a ticket, good for its minute, opened a shell until the first interval's check.
  const mint = async (client: Client): Promise<string> => ((await (await client.post('/dev/terminal/ticket')).json()) as { ticket: string }).ticket
  const shells = (): number => bridge.logs.filter((l) => l.event === 'terminal.session' && typeof l.pid === 'number').length
  const before = shells()
  const dev = await signIn('access_early')
  await runUsersOk({ DATA_DIR: dataDir }, 'grant', 'access_early', 'developer')
  const revoked = await mint(dev)
  await runUsersOk({ DATA_DIR: dataDir }, 'revoke', 'access_early', 'developer')
  t.equal(await upgradeStatus(bridge.port, `/ws?ticket=${encodeURIComponent(revoked)}`, ORIGIN), 403, 'a role taken back after the ticket')
  await runUsersOk({ DATA_DIR: dataDir }, 'grant', 'access_early', 'developer')
  const leaving = await mint(dev)
  t.equal((await dev.post('/api/auth/logout')).status, 200)
  t.equal(await upgradeStatus(bridge.port, `/ws?ticket=${encodeURIComponent(leaving)}`, ORIGIN), 403, 'a session ended after the ticket')
  const refusals = (): Record<string, unknown>[] => bridge.logs.filter((l) => l.event === 'terminal.refused' && l.user === 'access_early')
  await until(() => refusals().length >= 2, WAIT_MS, 'the refusals to be logged')
  t.match(refusals(), [{ status: 403, reason: 'access ended: developer access revoked' }, { status: 403, reason: 'access ended: signed out' }], 'each logged with the platform\'s reason')
  t.equal(await upgradeStatus(bridge.port, `/ws?ticket=${encodeURIComponent(leaving)}`, ORIGIN), 401, 'the ticket was spent by that use')
  const again = await signIn('access_early', false)
  const { term } = await openTerminal(again)
  t.match(await term.run('echo admitted'), /^admitted/, 'a ticket of a session still signed in, with the role, opens as before')
  term.ws.close()
  await term.whenClosed()
  await until(() => shells() >= before + 1, WAIT_MS, 'its session line')
  t.equal(shells(), before + 1, 'one shell spawned in all')
})

t.test('a platform that cannot be reached leaves every terminal open, logged once, and its answers count again once it is back', async (t) => {
  const dev = await signIn('access_outage')
  await runUsersOk({ DATA_DIR: dataDir }, 'grant', 'access_outage', 'developer')
  const { term } = await openTerminal(dev)
  const { ticket: early } = (await (await dev.post('/dev/terminal/ticket')).json()) as { ticket: string }
  // Counted before the stop: a periodic check that meets the platform as it stops logs the outage's
  // one line then, and counted after it, that line was taken for one before the outage.
  const failures = (): number => bridge.logs.filter((l) => l.event === 'terminal.access_check_failed').length
  const before = failures()
  await platform.stop()
  // The check before a terminal opens fails open too: a platform that cannot answer keeps no one out.
  const opened = await connect(bridge.port, { ticket: early })
  opened.send({ type: 'create' })
  await opened.frame('created')
  t.match(await opened.run('echo opened-in-the-outage'), /^opened-in-the-outage/)
  opened.ws.close()
  await opened.whenClosed()
  // Then three more intervals, each with a check that fails: still the one line.
  await until(() => failures() > before, WAIT_MS, 'the outage to be logged')
  await sleep(3 * CHECK_S * 1000)
  t.equal(failures(), before + 1, 'one line for the outage, not one per check')
  t.equal(term.closed, null, 'the terminal stays open')
  t.match(await term.run('echo through-the-outage'), /^through-the-outage/)
  t.match(bridge.logs.filter((l) => l.event === 'terminal.access_check_failed').at(-1), { error: /ECONNREFUSED/ })
  platform = await startPlatform({ dataDir, env: platformEnv })
  const restored = (): boolean => bridge.logs.some((l) => l.event === 'terminal.access_check_restored')
  await until(restored, WAIT_MS, 'the bridge to say the platform answers again')
  t.equal(term.closed, null, 'and the terminal is still open')
  await runUsersOk({ DATA_DIR: dataDir }, 'revoke', 'access_outage', 'developer')
  t.same(await term.whenClosed(WAIT_MS), { code: 1008, reason: 'access ended: developer access revoked' }, 'a revoke after the outage ends it')
})

t.test('POST /dev/terminal/access answers only the bridge, only about tickets this platform signed', async (t) => {
  const dev = await signIn('access_route')
  await runUsersOk({ DATA_DIR: dataDir }, 'grant', 'access_route', 'developer')
  const { ticket } = (await (await dev.post('/dev/terminal/ticket')).json()) as { ticket: string }
  const bearer = { authorization: `Bearer ${bridgeCredential([TICKET_SECRET])}` }
  const ask = (body: unknown, headers: Record<string, string> = bearer): Promise<Response> => new Client(base).post('/dev/terminal/access', body, headers)
  const challenge = 'a-fresh-challenge-0123456789'
  /** The answer about `ticket`, its proof checked (the bridge's check) and left out. */
  const answerFor = async (ticket: string): Promise<Record<string, unknown>> => {
    const { proof, ...answer } = (await (await ask({ ticket, challenge })).json()) as Record<string, unknown>
    const proved = answer.admitted === true ? null : String(answer.reason)
    t.ok(isAccessProof([TICKET_SECRET], challenge, ticket, proved, String(proof)), `the proof of ${JSON.stringify(answer)}`)
    return answer
  }

  const admitted = await ask({ ticket, challenge })
  t.equal(admitted.status, 200)
  t.equal(admitted.headers.get('cache-control'), 'no-store')
  const body = (await admitted.json()) as { proof: string }
  t.same(body, { success: true, admitted: true, proof: accessProof([TICKET_SECRET], challenge, ticket, null) }, "with the proof over the bridge's challenge and the ticket")
  t.notOk(isAccessProof([TICKET_SECRET], 'another-challenge-0123456789', ticket, null, body.proof), 'which proves nothing for another challenge')
  t.notOk(isAccessProof([TICKET_SECRET], challenge, ticket, 'signed out', body.proof), 'nor another answer')
  const { ticket: other } = (await (await dev.post('/dev/terminal/ticket')).json()) as { ticket: string }
  t.notOk(isAccessProof([TICKET_SECRET], challenge, other, null, body.proof), 'nor an answer about another ticket')

  await expectError(t, await ask({ ticket, challenge }, {}), 403, 'FORBIDDEN', 'no credential')
  await expectError(t, await ask({ ticket, challenge }, { authorization: `Bearer ${bridgeCredential(['another-ticket-secret-0123456789abcdef'])}` }), 403, 'FORBIDDEN', 'a credential of another secret')
  await expectError(t, await ask({ ticket, challenge }, { authorization: `Bearer ${ticket.split('.')[1]}` }), 403, 'FORBIDDEN', "the ticket's own mac")
  await expectError(t, await dev.post('/dev/terminal/access', { ticket }), 403, 'FORBIDDEN', "the developer's own session")

  await expectError(t, await ask({ challenge }), 400, 'VALIDATION_FAILED', 'no ticket')
  await expectError(t, await ask({ ticket }), 400, 'VALIDATION_FAILED', 'no challenge')
  await expectError(t, await ask({ ticket, challenge: 'short' }), 400, 'VALIDATION_FAILED', 'a challenge too short')
  await expectError(t, await ask({ ticket, challenge: `${challenge}\n` }), 400, 'VALIDATION_FAILED', 'a challenge with a line break')
  await expectError(t, await ask(`{"ticket":${JSON.stringify(ticket)},"challenge":"${challenge}","__proto__":{"admitted":true}}`), 400, 'VALIDATION_FAILED', 'more than the ticket and challenge')
  await expectError(t, await ask({ ticket: 42, challenge }), 400, 'VALIDATION_FAILED', 'a number')
  await expectError(t, await ask('{"ticket":'), 400, 'INVALID_JSON', 'not JSON')
  await expectError(t, await ask({ ticket: 'x'.repeat(70_000), challenge }), 413, 'PAYLOAD_TOO_LARGE', 'oversize')
  const forged = mintTicket(['another-ticket-secret-0123456789abcdef'], { id: 'u', username: 'access_route' }, 'c2Vzc2lvbg', Date.now()).ticket
  const refused = await expectError(t, await ask({ ticket: forged, challenge }), 400, 'VALIDATION_FAILED', 'a ticket of another secret')
  t.same(refused.details, [{ path: '/ticket', message: 'must be a ticket this platform signed' }])
  await expectError(t, await ask({ ticket: `${ticket}x`, challenge }), 400, 'VALIDATION_FAILED', 'a ticket altered')
  t.equal((await new Client(base).get('/dev/terminal/access', bearer)).status, 405, 'GET')

  // Signed with the secret, but the session sealed in it is another user's, or none that opens.
  const keys = sealKeys([SESSION_SECRET])
  const state = unseal(dev.cookies.get('playfield_session')!, keys, Date.now())!
  const user = { id: state.uid, username: 'access_route' }
  const swapped = mintTicket([TICKET_SECRET], user, sealReference({ uid: 'someone-else', rt: state.rt }, keys), Date.now()).ticket
  t.same(await answerFor(swapped), { success: true, admitted: false, reason: 'signed out' }, 'a reference naming another user')
  const garbage = mintTicket([TICKET_SECRET], user, 'bm90LXNlYWxlZA', Date.now()).ticket
  t.same(await answerFor(garbage), { success: true, admitted: false, reason: 'signed out' }, 'a reference that does not open')
  // A ticket is good for a minute at the bridge; the terminal it opened may stay for days.
  const old = mintTicket([TICKET_SECRET], user, sealReference({ uid: state.uid, rt: state.rt }, keys), Date.now() - 7_200_000).ticket
  t.same(await answerFor(old), { success: true, admitted: true }, 'a ticket expired two hours ago, its session and role still good')
})

t.test("an answer without the platform's proof ends nothing: what takes the platform's port while it is down cannot close terminals", async (t) => {
  // Any account may listen on a free port, a developer's shell included.
  const port = await freePort()
  let answer: (challenge: string, ticket: string) => unknown = () => ({ success: true, admitted: false, reason: 'signed out' })
  const challenges: string[] = []
  const squatter = http.createServer((req, res) => {
    let text = ''
    req.setEncoding('utf8').on('data', (chunk: string) => (text += chunk))
    req.on('end', () => {
      const { challenge, ticket } = JSON.parse(text) as { challenge: string; ticket: string }
      challenges.push(challenge)
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer(challenge, ticket)))
    })
  })
  await new Promise<void>((resolve) => squatter.listen(port, '127.0.0.1', resolve))
  t.teardown(() => squatter.close())
  const own = await startBridge({ PORT: String(port), TERMINAL_ACCESS_CHECK_S: String(CHECK_S) })
  t.teardown(() => own.stop())
  const term = await connect(own.port)
  term.send({ type: 'create' })
  await term.frame('created')
  const failures = (): Record<string, unknown>[] => own.logs.filter((l) => l.event === 'terminal.access_check_failed')
  const signedOut = 'signed out'
  // A ticket of another user who has signed out, which a platform of the same secret would answer for.
  const signedOutTicket = mintTicket([TICKET_SECRET], { id: 'u-other', username: 'other' }, 'other-session', Date.now()).ticket
  const forgeries: [string, (challenge: string, ticket: string) => unknown][] = [
    ['no proof', () => ({ success: true, admitted: false, reason: 'signed out' })],
    ['a proof under another secret', (c, k) => ({ success: true, admitted: false, reason: 'signed out', proof: accessProof(['another-ticket-secret-0123456789abcdef'], c, k, signedOut) })],
    ['a genuine proof over an earlier challenge', (_, k) => ({ success: true, admitted: false, reason: 'signed out', proof: accessProof([TICKET_SECRET], challenges[0]!, k, signedOut) })],
    ['the proof of "admitted" with "signed out"', (c, k) => ({ success: true, admitted: false, reason: 'signed out', proof: accessProof([TICKET_SECRET], c, k, null) })],
    // Found by an audit: a relay on the platform's port asked another platform about a signed-out user's ticket.
    ['a genuine proof over this challenge about another ticket', (c) => ({ success: true, admitted: false, reason: 'signed out', proof: accessProof([TICKET_SECRET], c, signedOutTicket, signedOut) })],
  ]
  for (const [what, forged] of forgeries) {
    answer = forged
    const asked = challenges.length
    await until(() => challenges.length >= asked + 2, WAIT_MS, `two checks answered with ${what}`)
    t.equal(term.closed, null, `${what}: the terminal stays open`)
  }
  t.equal(new Set(challenges).size, challenges.length, 'each check with a challenge of its own')
  t.equal(failures().length, 1, 'logged once')
  t.match(failures()[0], { error: /without an access answer the platform proved/ })
  t.match(await term.run('echo still-open'), /^still-open/)
  // The same answer with the platform's proof over the check's own challenge: it counts.
  answer = (c, k) => ({ success: true, admitted: false, reason: 'signed out', proof: accessProof([TICKET_SECRET], c, k, signedOut) })
  t.same(await term.whenClosed(WAIT_MS), { code: 1008, reason: 'access ended: signed out' })
})

t.test('an oversized or dripping answer on the platform\'s port ends nothing: the bridge runs on, and its checks go on', async (t) => {
  // Found in review: a 5,000-byte answer in one piece ended the bridge (its pooled socket, destroyed
  // with an error after the answer was read, had no listener left), and a listener sending a byte
  // a second held a terminal's checks, the ones the platform asks for included, for good.
  const port = await freePort()
  let mode: 'big404' | 'big200' | 'drip' = 'big404'
  let asked = 0
  const squatter = http.createServer((req, res) => {
    asked++
    req.resume()
    if (mode === 'drip') {
      res.writeHead(200, { 'content-type': 'application/json' })
      const drip = setInterval(() => res.write(' '), 1_000)
      res.once('close', () => clearInterval(drip))
      return
    }
    res.writeHead(mode === 'big404' ? 404 : 200, { 'content-type': mode === 'big404' ? 'text/html' : 'application/json' }).end('x'.repeat(5_000))
  })
  await new Promise<void>((resolve) => squatter.listen(port, '127.0.0.1', resolve))
  t.teardown(() => {
    squatter.closeAllConnections()
    squatter.close()
  })
  const own = await startBridge({ PORT: String(port), TERMINAL_ACCESS_CHECK_S: String(CHECK_S) })
  t.teardown(() => own.stop())
  const term = await connect(own.port)
  term.send({ type: 'create' })
  await term.frame('created')
  for (const next of ['big404', 'big200'] as const) {
    mode = next
    const before = asked
    await until(() => asked >= before + 3, WAIT_MS, `three checks answered ${next}`)
    t.equal(own.child.exitCode, null, `${next}: the bridge runs`)
    t.equal(term.closed, null, `${next}: the terminal stays open`)
  }
  t.match(own.logs.find((l) => l.event === 'terminal.access_check_failed'), { error: /an answer over 4096 bytes|answered 404/ }, 'the failure is logged')
  mode = 'drip'
  const before = asked
  // Each check gives up at its 5 s deadline, however the bytes trickle, and the next one comes.
  await until(() => asked >= before + 2, 20_000, 'a second check after a dripping answer')
  t.equal(own.child.exitCode, null, 'drip: the bridge runs')
  t.equal(term.closed, null, 'drip: the terminal stays open')
  t.match(await term.run('echo still-open'), /^still-open/)
})

/**
 * A stand-in for the platform on a port of its own, holding the ticket secret: each question gets
 * the platform's proven answer, `reason` null for admitted, or a 503 while `down`. `hold` keeps the
 * next answer back until released; the answer is the one due when the question came.
 */
async function provingPlatform(t: Test): Promise<{ port: number; state: { down: boolean; hold: boolean; reason: string | null }; asked: () => number; held: (() => void)[] }> {
  const port = await freePort()
  const state = { down: false, hold: false, reason: null as string | null }
  const held: (() => void)[] = []
  let asked = 0
  const server = http.createServer((req, res) => {
    let text = ''
    req.setEncoding('utf8').on('data', (chunk: string) => (text += chunk))
    req.on('end', () => {
      asked++
      if (state.down) return void res.writeHead(503).end()
      const { challenge, ticket } = JSON.parse(text) as { challenge: string; ticket: string }
      const reason = state.reason
      const proof = accessProof([TICKET_SECRET], challenge, ticket, reason)
      const reply = (): void => void res.writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify(reason === null ? { success: true, admitted: true, proof } : { success: true, admitted: false, reason, proof }))
      if (state.hold) {
        state.hold = false
        held.push(reply)
      } else reply()
    })
  })
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
  t.teardown(() => {
    server.closeAllConnections()
    server.close()
  })
  return { port, state, asked: () => asked, held }
}

t.test('each outage is logged once and each return once: a second outage, after the platform answered again, is logged again', async (t) => {
  const proving = await provingPlatform(t)
  const own = await startBridge({ PORT: String(proving.port), TERMINAL_ACCESS_CHECK_S: String(CHECK_S) })
  t.teardown(() => own.stop())
  const term = await connect(own.port)
  term.send({ type: 'create' })
  await term.frame('created')
  const lines = (event: string): number => own.logs.filter((l) => l.event === event).length
  for (const outage of [1, 2]) {
    proving.state.down = true
    await until(() => lines('terminal.access_check_failed') >= outage, WAIT_MS, `outage ${outage} to be logged`)
    proving.state.down = false
    await until(() => lines('terminal.access_check_restored') >= outage, WAIT_MS, `the return after outage ${outage} to be logged`)
    const answered = proving.asked()
    await until(() => proving.asked() >= answered + 2, WAIT_MS, `two more checks answered after outage ${outage}`)
    t.equal(lines('terminal.access_check_restored'), outage, `outage ${outage}: one line for the return, not one per answer`)
  }
  t.equal(lines('terminal.access_check_failed'), 2, 'one line for each outage')
  t.equal(term.closed, null, 'the terminal stays open throughout')
})

t.test('a notice that comes while a check is under way has the terminal checked again once it is answered: that answer may predate the change', async (t) => {
  // The bridge's own checks once an hour: the close below is the notice's doing.
  const proving = await provingPlatform(t)
  const own = await startBridge({ PORT: String(proving.port), TERMINAL_ACCESS_CHECK_S: '3600' })
  t.teardown(() => own.stop())
  const term = await connect(own.port)
  term.send({ type: 'create' })
  await term.frame('created')
  const notice = (): Promise<Response> => fetch(`${own.url}/access-changed`, { method: 'POST', headers: { authorization: `Bearer ${accessChangedCredential([TICKET_SECRET])}` } })
  proving.state.hold = true
  t.equal((await notice()).status, 202)
  await until(() => proving.held.length === 1, WAIT_MS, 'the check the notice asked for to be held')
  // Access ends (a logout) while that check's "admitted" is on its way; the platform's notice of it comes meanwhile.
  proving.state.reason = 'signed out'
  t.equal((await notice()).status, 202)
  // The second notice's round comes a second after the first (one round a second), still during the held check.
  await sleep(1_500)
  t.equal(term.closed, null, 'open while the first answer is held')
  proving.held.shift()!()
  t.same(await term.whenClosed(WAIT_MS), { code: 1008, reason: 'access ended: signed out' }, 'checked again after the held answer, not at the next hourly check')
})

t.test('TERMINAL_ACCESS_CHECK_S=0: the bridge asks the platform nothing, neither before a terminal opens nor while it is open', async (t) => {
  const proving = await provingPlatform(t)
  proving.state.reason = 'signed out'
  const own = await startBridge({ PORT: String(proving.port), TERMINAL_ACCESS_CHECK_S: '0' })
  t.teardown(() => own.stop())
  const term = await connect(own.port)
  term.send({ type: 'create' })
  await term.frame('created')
  await sleep(2 * CHECK_S * 1000)
  t.match(await term.run('echo unchecked'), /^unchecked/)
  t.equal(proving.asked(), 0, 'no question asked')
  t.equal(term.closed, null, 'and the terminal open')
})

t.test('DEV_ACCESS_USERS: a listed id admits the account with that id, never one whose name is spelled as it', (t) => {
  const id = '3f0c2a8e-1b2c-4d5e-8f90-a1b2c3d4e5f6'
  for (const kind of ['embedded', 'nakama'] as const) {
    const app = { config: { devAccessUsers: [id, 'Dana'] }, backend: { kind } } as unknown as App
    t.equal(namedByDevAccess(app, id), false, `${kind}: a name spelled as a listed id`)
    t.equal(namedByDevAccess(app, id.toUpperCase()), false, `${kind}: in upper case too`)
    t.equal(namedByDevAccess(app, 'Dana'), true, `${kind}: a listed name`)
  }
  t.end()
})
