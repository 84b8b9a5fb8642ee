import t from 'tap'
import { setTimeout as sleep } from 'node:timers/promises'
import net from 'node:net'
import { startPlatform } from './helpers/platform.js'
import { rawExchange, rawRequest, waitForLog } from './helpers/raw-http.js'

t.test('the real platform: X-Request-Id and one JSON access-log line on stdout per request', async (t) => {
  const platform = await startPlatform()
  t.teardown(() => platform.stop())
  const res = await rawRequest(platform.url, 'GET', '/api/games?x=1')
  const id = res.headers['x-request-id']
  t.match(id, /^[0-9a-f-]{36}$/)
  const from = platform.logs.length - 1
  let line: Record<string, unknown> | undefined
  for (let i = 0; i < 100 && !line; i++) {
    line = platform.logs.find((e) => e.event === 'http.request' && e.id === id)
    if (!line) await sleep(20)
  }
  t.match(line, { time: /^\d{4}-\d\d-\d\dT/, event: 'http.request', id, method: 'GET', path: '/api/games', status: 200, ms: Number, ip: '127.0.0.1' })
  const ms = line!.ms as number
  t.ok(ms >= 0 && ms < 10_000 && Number.isInteger(Math.round(ms * 100)) && Math.abs(ms * 100 - Math.round(ms * 100)) < 1e-6, `ms ${ms} in hundredths`)
  t.ok(from >= 0)

  // Ids are unique per request and keep a UUID's shape (random per process, a counter per request).
  const more = await Promise.all([1, 2, 3].map(() => rawRequest(platform.url, 'GET', '/api/games')))
  const ids = [id, ...more.map((r) => r.headers['x-request-id'])]
  t.equal(new Set(ids).size, 4, 'four requests, four ids')
  for (const other of ids) t.match(other, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)

  // Paths a client writes oddly are logged as URL parsing reads them, in lines that stay JSON.
  const odd: [string, string][] = [
    ['/api/games/a"b', '/api/games/a%22b'],
    ['/api/games/a\\b', '/api/games/a/b'],
    ['/api/games/x/../{y}', '/api/games/%7By%7D'],
    ['/api/games/%22q%5C?n="1"', '/api/games/%22q%5C'],
    // A scheme URL parsing knows nothing of keeps a backslash in its path, and \u0022 is a quote in JSON.
    ['foo://x/a\\', '/a%5C'],
    ['foo://x/b\\u0022c', '/b%5Cu0022c'],
  ]
  for (const [target, path] of odd) {
    const res = await rawRequest(platform.url, 'GET', target)
    t.equal(res.status, 404, target)
    const id = res.headers['x-request-id']
    let entry: Record<string, unknown> | undefined
    for (let i = 0; i < 100 && !entry; i++) {
      entry = platform.logs.find((e) => e.id === id || (typeof e.raw === 'string' && e.raw.includes(String(id))))
      if (!entry) await sleep(20)
    }
    t.match(entry, { event: 'http.request', id, method: 'GET', path, status: 404 }, `${target} is logged as ${path}`)
    t.equal(entry?.path, path, `${target}: the logged path is exactly ${path}`)
  }

  // Dot segments in a path of plain characters are resolved as URL parsing (and every browser)
  // resolves them: the route and the log line see the path the target names.
  for (const [target, path] of [['/api/games/x/../tidepool-tiles', '/api/games/tidepool-tiles'], ['/api/./games', '/api/games']] as const) {
    const res = await rawRequest(platform.url, 'GET', target)
    t.equal(res.status, 200, target)
    const id = res.headers['x-request-id']
    let entry: Record<string, unknown> | undefined
    for (let i = 0; i < 100 && !entry; i++) {
      entry = platform.logs.find((e) => e.id === id)
      if (!entry) await sleep(20)
    }
    t.match(entry, { event: 'http.request', id, path, status: 200 }, `${target} is logged as ${path}`)
    t.equal(entry?.path, path, `${target}: the logged path is exactly ${path}`)
  }

  // Targets llhttp lets through but no URL can be made of: 400 in JSON, and the process lives on.
  for (const target of ['http://[/', 'http://[::1/api/games', 'http://a:99999/api/games']) {
    const answer = await rawExchange(port(platform.url), `GET ${target} HTTP/1.1\r\nHost: x`)
    t.match(answer, /^HTTP\/1\.1 400 /, target)
    t.match(answer, /\r\nx-request-id: [0-9a-f-]{36}\r\n/i)
    t.same(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)), { error: 'the request target is not a valid URL', code: 'BAD_REQUEST' })
  }
  t.equal((await rawRequest(platform.url, 'GET', '/api/games')).status, 200, 'still serving')
})

const port = (url: string): number => Number(new URL(url).port)

/** Send a request's headers and the first half of its body; the rest when `finish` is called. */
function slowRequest(port: number, body: string, connection = 'close'): { response: Promise<string>; finish: () => void } {
  const socket = net.connect(port, '127.0.0.1')
  const half = Math.floor(body.length / 2)
  socket.write(
    `POST /api/auth/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: ${connection}\r\n\r\n${body.slice(0, half)}`,
  )
  let text = ''
  socket.setEncoding('utf8').on('data', (d: string) => (text += d))
  const response = new Promise<string>((resolve) => socket.on('close', () => resolve(text)))
  return { response, finish: () => socket.write(body.slice(half)) }
}

/** A platform sent `signal` while a login's body is half sent; `mark` is where its log stood just before. */
async function signalDuringLogin(connection = 'close', signal: NodeJS.Signals = 'SIGTERM') {
  const platform = await startPlatform()
  const slow = slowRequest(platform.port, JSON.stringify({ username: 'nobody-here', password: 'wrong-password' }), connection)
  await sleep(300)
  const mark = platform.logs.length
  platform.child.kill(signal)
  return { platform, slow, mark }
}

t.test('SIGTERM with a slow request in flight: the request is finished, then the process exits 0', async (t) => {
  const { platform, slow, mark } = await signalDuringLogin()
  await waitForLog(platform.logs, 'platform.stopping', mark)
  t.equal(platform.child.exitCode, null, 'still running while the request is in flight')
  await t.rejects(rawRequest(platform.url, 'GET', '/api/games'), 'new connections are refused')
  slow.finish()
  const response = await slow.response
  t.match(response, /^HTTP\/1\.1 401 /, 'the in-flight request got its answer')
  t.match(response, /\r\n\r\n\{"error":"[^"]+","code":"INVALID_CREDENTIALS"\}$/)
  const exit = await platform.exited
  t.strictSame(exit, { code: 0, signal: null })
})

// `timeout` and a supervisor's group kill send each server of `npm start` two SIGTERMs (theirs and
// bin/start's): the second must not cut the stop short (lib/stop-signal.ts).
t.test('a second SIGTERM during the stop changes nothing: the request in flight is still answered, and the exit is 0', async (t) => {
  const { platform, slow, mark } = await signalDuringLogin()
  await waitForLog(platform.logs, 'platform.stopping', mark)
  platform.child.kill('SIGTERM')
  await sleep(300)
  t.equal(platform.child.exitCode, null, 'still running after the second SIGTERM')
  t.equal(platform.child.signalCode, null, 'not killed by it')
  slow.finish()
  t.match(await slow.response, /^HTTP\/1\.1 401 /, 'the in-flight request got its answer')
  t.strictSame(await platform.exited, { code: 0, signal: null })
  t.equal(platform.logs.slice(mark).filter((e) => e.event === 'platform.stopping').length, 1, 'one stopping line')
})

t.test('a second SIGINT (a second Ctrl-C) ends the process at once, in the middle of its stop', async (t) => {
  const { platform, slow, mark } = await signalDuringLogin('close', 'SIGINT')
  await waitForLog(platform.logs, 'platform.stopping', mark)
  t.equal(platform.child.exitCode, null, 'the first SIGINT began a graceful stop')
  platform.child.kill('SIGINT')
  t.strictSame(await platform.exited, { code: null, signal: 'SIGINT' }, 'the second ended it, by the default action')
  t.equal(await slow.response, '', 'the request in flight was cut')
})

t.test('SIGTERM with a request that never completes: cut when the grace runs out, logged as 499, then the process exits 0', async (t) => {
  const { platform, slow, mark } = await signalDuringLogin()
  const response = await slow.response
  t.equal(response, '', 'cut without an answer')
  t.strictSame(await platform.exited, { code: 0, signal: null })
  // The process used to exit before the cut response's close, which writes its access-log line.
  t.match(platform.logs.slice(mark).filter((e) => e.event === 'http.request'), [{ method: 'POST', path: '/api/auth/login', status: 499 }], 'its access-log line')
})

t.test('SIGTERM with a keep-alive request in flight: the connection ends once it is answered, not at the keep-alive time-out', async (t) => {
  const { platform, slow, mark } = await signalDuringLogin('keep-alive')
  await waitForLog(platform.logs, 'platform.stopping', mark)
  slow.finish()
  const finished = Date.now()
  // The response promise settles when the server closes the socket: a kept-alive one would stay
  // open for the 5 s keep-alive time-out, and the exit would wait on it.
  const response = await slow.response
  t.ok(Date.now() - finished < 3_000, 'closed by the server well before the keep-alive time-out')
  t.match(response, /^HTTP\/1\.1 401 /)
  t.strictSame(await platform.exited, { code: 0, signal: null })
})

t.test('SIGTERM with pipelined requests in flight: each is answered before the connection ends', async (t) => {
  const platform = await startPlatform()
  const socket = net.connect(platform.port, '127.0.0.1')
  const login = JSON.stringify({ username: 'nobody-here', password: 'wrong-password' })
  const post = (path: string, body: string) =>
    `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
  let text = ''
  socket.setEncoding('utf8').on('data', (d: string) => (text += d))
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()))
  // The login checks a password (tens of ms): SIGTERM comes while it runs and the guest waits behind it.
  socket.write(post('/api/auth/login', login) + post('/api/auth/guest', ''))
  await sleep(10)
  platform.child.kill('SIGTERM')
  await closed
  const statuses = [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]))
  t.same(statuses, [401, 200], 'the login\'s answer, then the guest\'s: no request ran without its answer')
  t.strictSame(await platform.exited, { code: 0, signal: null })
})
