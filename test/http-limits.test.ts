import t from 'tap'
import { setTimeout as sleep } from 'node:timers/promises'
import net from 'node:net'
import { readdirSync, readlinkSync } from 'node:fs'
import { startPlatform } from './helpers/platform.js'
import { jsonOf, rawBytes, rawRequest, trickle, waitForLog } from './helpers/raw-http.js'

// The limits CONTRACT §4 and the README's API section give, on the real platform, at their edges.
const platform = await startPlatform()
t.teardown(() => platform.stop())

const TOO_LARGE = { error: 'body larger than 65536 bytes', code: 'PAYLOAD_TOO_LARGE' }

/** A login body of exactly `bytes` bytes: its password is too long for the schema, so it is read and refused with 400. */
function loginOf(bytes: number): string {
  const frame = '{"username":"alice","password":""}'
  return frame.replace('""', `"${'p'.repeat(bytes - frame.length)}"`)
}

/** Send `text` as written on a new connection; resolves with everything answered before the close. */
function exchange(text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(platform.port, '127.0.0.1', () => socket.end(text))
    let answer = ''
    socket.setEncoding('utf8').on('data', (d: string) => (answer += d))
    socket.on('close', () => resolve(answer))
    socket.on('error', reject)
  })
}

t.test('a body of exactly 65,536 bytes is read, one byte more is 413, whether framed by Content-Length or chunked', async (t) => {
  for (const framing of ['content-length', 'chunked'] as const) {
    const send = (text: string) => {
      const headers: Record<string, string> = { 'content-type': 'application/json' }
      if (framing === 'chunked') headers['transfer-encoding'] = 'chunked'
      else headers['content-length'] = String(Buffer.byteLength(text))
      return rawRequest(platform.url, 'POST', '/api/auth/login', { ...headers, 'x-forwarded-for': '198.51.100.7' }, text)
    }
    const atLimit = await send(loginOf(65_536))
    t.equal(atLimit.status, 400, `${framing}: 65,536 bytes are read`)
    t.strictSame(jsonOf(atLimit), { error: 'request does not match the schema', code: 'VALIDATION_FAILED', details: [{ path: '/password', message: 'must not have more than 256 characters' }] })
    const over = await send(loginOf(65_537))
    t.equal(over.status, 413, `${framing}: 65,537 bytes are too many`)
    t.strictSame(jsonOf(over), TOO_LARGE)
    t.equal(over.headers['connection'], 'close')
  }
})

t.test('a second Host or Content-Type line is found behind 2,000 other header lines', async (t) => {
  // 2,000 lines of 5 bytes: Node's default maxHeadersCount, well within the 16 KiB of headers.
  const padding = 'a:1\r\n'.repeat(2000)
  const host = await exchange(`GET /api/games HTTP/1.1\r\nHost: a\r\n${padding}Host: b\r\nConnection: close\r\n\r\n`)
  t.match(host, /^HTTP\/1\.1 400 /)
  t.match(host, /\r\n\r\n\{"error":"the Host header is repeated","code":"BAD_REQUEST"\}$/)
  const json = '{"username":"alice","password":"wrong-password"}'
  const type = await exchange(
    `POST /api/auth/login HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n${padding}Content-Type: text/plain\r\n` +
      `Content-Length: ${json.length}\r\nX-Forwarded-For: 198.51.100.8\r\nConnection: close\r\n\r\n${json}`,
  )
  t.match(type, /^HTTP\/1\.1 415 /)
  t.match(type, /\r\n\r\n\{"error":"the Content-Type header is repeated","code":"UNSUPPORTED_MEDIA_TYPE"\}$/)
})

t.test('a body that trickles in is cut with 408 REQUEST_TIMEOUT once the request is 30 s old', { timeout: 60_000 }, async (t) => {
  const head = 'POST /api/auth/login HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n'
  const { text: answer, seconds } = await trickle(platform.port, head, ' ', 45_000)
  t.match(answer, /^HTTP\/1\.1 408 /)
  t.match(answer, /\r\n\r\n\{"error":"the request was not complete in time","code":"REQUEST_TIMEOUT"\}$/)
  t.ok(seconds >= 29 && seconds < 40, `cut after ${seconds} s`)
})

t.test('a client that pipelines requests and never reads the answers is let go within 30 s of the 33rd, refused', { timeout: 120_000 }, async (t) => {
  /** The platform's open sockets (its /proc fd links). */
  const sockets = (): Set<string> => {
    const fds = `/proc/${platform.child.pid}/fd`
    return new Set(readdirSync(fds).map((fd) => { try { return readlinkSync(`${fds}/${fd}`) } catch { return '' } }).filter((l) => l.startsWith('socket:')))
  }
  const before = sockets()
  const logsBefore = platform.logs.length
  const started = Date.now()
  let connected!: () => void
  const open = new Promise<void>((resolve) => (connected = resolve))
  const client = net.connect(platform.port, '127.0.0.1', () => {
    // 74 KB of requests; 32 are answered (into the kernel's buffers, or held for the client) and
    // the 33rd refused; the platform reads no further.
    client.write('GET /api/games HTTP/1.1\r\nHost: a\r\n\r\n'.repeat(2000))
    client.pause()
    connected()
  })
  client.on('error', () => undefined)
  await open
  // Seen first: the platform holding the connection, or (if it has let go already) its 429's access-log line.
  const held = (): string[] => [...sockets()].filter((s) => !before.has(s))
  const refusalLogged = (): boolean => platform.logs.slice(logsBefore).some((entry) => entry.event === 'http.request' && entry.status === 429)
  while (held().length === 0 && !refusalLogged() && Date.now() - started < 10_000) await sleep(10)
  t.ok(held().length > 0 || refusalLogged(), 'the platform took the connection')
  while (held().length > 0 && Date.now() - started < 90_000) await sleep(500)
  const seconds = (Date.now() - started) / 1000
  t.same(held(), [], `the platform holds no socket of it after ${seconds} s`)
  t.ok(seconds < 40, 'within the refusal\'s 30 s drain time')
  client.destroy()
  t.equal((await fetch(platform.url + '/api/games')).status, 200, 'still serving')
})

t.test('past 32 requests pipelined on a connection and not yet answered, the next is 429 and the connection ends after it', async (t) => {
  const answers = await rawBytes(platform.port, 'GET /api/games HTTP/1.1\r\nHost: a\r\n\r\n'.repeat(40))
  const heads = answers.match(/HTTP\/1\.1 \d{3} /g) ?? []
  t.same(heads, [...Array(32).fill('HTTP/1.1 200 '), 'HTTP/1.1 429 '], 'the first 32 answered, the 33rd refused, the rest dropped')
  const refusal = answers.slice(answers.lastIndexOf('HTTP/1.1 429 '))
  t.match(refusal, /\r\nretry-after: 1\r\n/i)
  t.match(refusal, /\r\nconnection: close\r\n/i)
  t.match(refusal, /\r\n\r\n\{"error":"more than 32 requests on this connection wait for their answers; read them first","code":"RATE_LIMITED"\}$/)
  t.equal((await fetch(platform.url + '/api/games')).status, 200, 'another connection is served')
})

t.test('a GET with a body is held to the body rules: over 65,536 bytes is 413, not drained unbounded; not JSON is 415', async (t) => {
  const big = '{"a":"' + 'x'.repeat(100_000) + '"}'
  for (const path of ['/api/games', '/api/auth/session']) {
    const declared = await rawRequest(platform.url, 'GET', path, { 'content-type': 'application/json', 'content-length': String(big.length) }, big)
    t.equal(declared.status, 413, `${path}: Content-Length ${big.length}`)
    t.strictSame(jsonOf(declared), TOO_LARGE)
    t.equal(declared.headers['connection'], 'close')
    const chunked = await exchange(`GET ${path} HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n` +
      `${big.length.toString(16)}\r\n${big}\r\n0\r\n\r\n`)
    t.match(chunked, /^HTTP\/1\.1 413 /, `${path}: chunked, ${big.length} bytes`)
    t.match(chunked, /\r\n\r\n\{"error":"body larger than 65536 bytes","code":"PAYLOAD_TOO_LARGE"\}$/)
    const text = await rawRequest(platform.url, 'GET', path, { 'content-type': 'text/plain', 'content-length': '5' }, 'hello')
    t.strictSame([text.status, jsonOf(text)], [415, { error: 'body must be application/json', code: 'UNSUPPORTED_MEDIA_TYPE' }], `${path}: text/plain`)
  }
  // A small JSON object is ignored, as by the other endpoints that take no body: the GET is answered.
  const small = await rawRequest(platform.url, 'GET', '/api/games', { 'content-type': 'application/json', 'content-length': '2' }, '{}')
  t.equal(small.status, 200)
  t.equal((jsonOf(small) as { success: boolean }).success, true)
})

t.test('at its descriptor limit the platform refuses new connections, logs it, and serves again once they close', async (t) => {
  // 200 descriptors: connections are held to 150, leaving 50 for the database, files and the rest.
  const capped = await startPlatform({ wrapper: ['prlimit', '--nofile=200:200'] })
  t.teardown(() => capped.stop())
  const idle: net.Socket[] = []
  t.teardown(() => idle.forEach((socket) => socket.destroy()))
  for (let i = 0; i < 170; i++) {
    const socket = net.connect(capped.port, '127.0.0.1')
    socket.on('error', () => undefined)
    idle.push(socket)
  }
  await waitForLog(capped.logs, 'http.connections_full')
  t.match(capped.logs.find((entry) => entry.event === 'http.connections_full'), { max: 150, dropped: 1 }, 'the first refusal at once')
  // The other 19 in one line 10 s later.
  const first = capped.logs.findIndex((entry) => entry.event === 'http.connections_full')
  t.match(await waitForLog(capped.logs, 'http.connections_full', first + 1, 15_000), { max: 150, dropped: 19 }, 'the rest counted in the next line')
  t.equal(idle.filter((socket) => !socket.destroyed).length, 150, 'the first 150 are held')
  for (const socket of idle) socket.destroy()
  await sleep(200)
  const res = await fetch(`${capped.url}/api/games`)
  t.equal(res.status, 200, 'served again')
  t.notMatch(capped.stderr(), /EMFILE/, 'no descriptor ran out')
})
