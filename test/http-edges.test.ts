import t from 'tap'
import { setTimeout as sleep } from 'node:timers/promises'
import net, { type AddressInfo } from 'node:net'
import { BlockList } from 'node:net'
import { Router } from '../lib/http/router.js'
import { createServer } from '../lib/http/server.js'
import { closeGracefully } from '../lib/http/close.js'
import { readJson } from '../lib/http/body.js'
import { json } from '../lib/http/reply.js'
import { reinject } from '../lib/http/reinject.js'
import { jsonOf, rawBytes, rawRequest } from './helpers/raw-http.js'

// Edges of lib/http the other HTTP tests leave open, each found by a mutation of the built code
// that they let pass: a flat header list without Vary, a HEAD with a body, a long fraction, a
// header value that spells a header name, IDENTITY as a coding, X-Forwarded-For hops a client
// wrote, Vary on parser refusals, and a graceful close after connections came and went.

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const FLAT_BODY = '{"success":true}'

let held = 0
const router = new Router()
  .add('POST', '/api/held', async ({ req, res }) => {
    held++
    json(res, 200, { success: true, got: await readJson(req) })
  })
  .add('GET', '/api/thing', ({ res }) => json(res, 200, { success: true }))
  .add('POST', '/api/any-json', async ({ req, res }) => json(res, 200, { success: true, got: await readJson(req) }))
  // The catalogue's way of answering: one flat header list, here without a Vary of its own.
  .add('GET', '/api/flat', ({ res }) => {
    res.writeHead(200, ['content-type', 'application/json; charset=utf-8', 'content-length', String(FLAT_BODY.length)]).end(FLAT_BODY)
  })
  .add('GET', '/api/flat-reason', ({ res }) => {
    res.writeHead(200, 'Fine', ['content-type', 'application/json; charset=utf-8', 'content-length', String(FLAT_BODY.length)]).end(FLAT_BODY)
  })
  .add('GET', '/api/echo', ({ req, res }) => json(res, 200, { success: true, name: req.headers['x-name'] ?? null, version: req.httpVersion }))
  .add('GET', '/api/whoami', ({ res, ip, proto }) => json(res, 200, { success: true, ip, proto }))
  .add('GET', '/flat-page', ({ res }) => {
    res.writeHead(200, ['content-type', 'text/html; charset=utf-8', 'content-length', '3']).end('<p>')
  })

const server = createServer({ router, origins: ['https://play.example.com'], trustProxy: new BlockList(), log: () => {} })
let base = ''
let port = 0
t.before(() => new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => {
  port = (server.address() as AddressInfo).port
  base = `http://127.0.0.1:${port}`
  resolve()
})))
t.teardown(() => closeGracefully(server, 1000))


t.test('an API answer written as one flat header list still carries Vary: Origin, X-Request-Id and nosniff', async (t) => {
  for (const path of ['/api/flat', '/api/flat-reason']) {
    const res = await rawRequest(base, 'GET', path)
    t.equal(res.status, 200, path)
    t.equal(res.headers['vary'], 'Origin', `${path}: Vary: Origin (CONTRACT §2: every API response)`)
    t.match(res.headers['x-request-id'], UUID, `${path}: a request id`)
    t.equal(res.headers['x-content-type-options'], 'nosniff', `${path}: nosniff`)
    t.strictSame(jsonOf(res), { success: true })
  }
  const page = await rawRequest(base, 'GET', '/flat-page')
  t.equal(page.status, 200)
  t.equal(page.headers['vary'], undefined, 'a page outside /api/ gets no Vary: Origin')
  t.equal(page.headers['x-content-type-options'], 'nosniff', 'but nosniff all the same')
})

t.test('a HEAD with a body is held to the body rules like a GET: not JSON is 415, over 65,536 bytes is 413', async (t) => {
  const text = await rawBytes(port, 'HEAD /api/thing HTTP/1.1\r\nHost: a\r\nContent-Type: text/plain\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello')
  t.match(text, /^HTTP\/1\.1 415 /, 'text/plain: 415, as a GET gets')
  t.notMatch(text, /\r\n\r\n./, 'no body to a HEAD')
  const big = '{"a":"' + 'x'.repeat(70_000) + '"}'
  const declared = await rawBytes(port, `HEAD /api/thing HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: ${big.length}\r\n\r\n${big}`)
  t.match(declared, /^HTTP\/1\.1 413 /, `Content-Length ${big.length}: 413`)
  t.match(declared, /\r\nconnection: close\r\n/i, 'the unread body ends the connection')
  const small = await rawBytes(port, 'HEAD /api/thing HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}')
  t.match(small, /^HTTP\/1\.1 200 /, 'an empty JSON object is ignored: answered as usual')
})

t.test('a fraction with more digits than a double keeps is kept as JSON.parse reads it: none of its digits is a number of its own', async (t) => {
  for (const n of ['0.12345678901234567', '1.9007199254740993', '-3.00000000000000000001e-5', '123.45678901234567890123']) {
    const text = `{"n":${n}}`
    const res = await rawRequest(base, 'POST', '/api/any-json', { 'content-type': 'application/json' }, text)
    t.strictSame([res.status, jsonOf(res)], [200, { success: true, got: JSON.parse(text) }], text)
  }
})

t.test('a header whose value spells Host or Content-Type is not a second such line', async (t) => {
  const host = await rawBytes(port, 'GET /api/thing HTTP/1.1\r\nHost: a\r\nX-Note: host\r\nConnection: close\r\n\r\n')
  t.match(host, /^HTTP\/1\.1 200 /, 'X-Note: host')
  const kit = '{"name":"kit"}'
  const type = await rawBytes(port,
    `POST /api/any-json HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nX-Note: content-type\r\nContent-Length: ${kit.length}\r\nConnection: close\r\n\r\n${kit}`,
  )
  t.match(type, /^HTTP\/1\.1 200 [^]*\{"success":true,"got":\{"name":"kit"\}\}$/, 'X-Note: content-type')
})

t.test('a Content-Encoding of identity is no coding in any case: IDENTITY is read as JSON', async (t) => {
  for (const coding of ['IDENTITY', 'Identity']) {
    const res = await rawRequest(base, 'POST', '/api/any-json', { 'content-type': 'application/json', 'content-encoding': coding }, '{"a":1}')
    t.strictSame([res.status, jsonOf(res)], [200, { success: true, got: { a: 1 } }], coding)
  }
  const gz = await rawRequest(base, 'POST', '/api/any-json', { 'content-type': 'application/json', 'content-encoding': 'GZIP' }, '{"a":1}')
  t.equal(gz.status, 415, 'GZIP is gzip: refused')
})

/**
 * A server that believes the proxies in `trust`; resolves with the client address each request
 * from 127.0.0.1 (with `headers`, one after another) is given, and the server's log lines but
 * the access log's.
 */
async function clientsOf(trust: BlockList, ...requests: Record<string, string>[]): Promise<{ clients: unknown[]; logged: Record<string, unknown>[] }> {
  const logged: Record<string, unknown>[] = []
  const proxied = createServer({ router, origins: [], trustProxy: trust, log: (entry) => logged.push(entry) })
  await new Promise<void>((resolve) => proxied.listen(0, '127.0.0.1', resolve))
  try {
    const clients: unknown[] = []
    for (const headers of requests) {
      const res = await rawRequest(`http://127.0.0.1:${(proxied.address() as AddressInfo).port}`, 'GET', '/api/whoami', headers)
      const { ip, proto } = jsonOf(res) as { ip: string; proto: string }
      clients.push({ ip, proto })
    }
    return { clients, logged: logged.filter((entry) => entry.event !== 'http.request') }
  } finally {
    await closeGracefully(proxied, 1000)
  }
}

/** The client address one request from 127.0.0.1 with `headers` is given, by a server that believes the proxies in `trust`. */
const clientOf = async (trust: BlockList, headers: Record<string, string>): Promise<unknown> => (await clientsOf(trust, headers)).clients[0]

t.test('X-Forwarded-For from a trusted proxy: the nearest hop it does not trust is the client, never one the client wrote before it', async (t) => {
  const loopback = new BlockList()
  loopback.addAddress('127.0.0.1', 'ipv4')
  // nginx appends the address it saw to whatever the client sent: the last hops are the real ones.
  t.strictSame(await clientOf(loopback, { 'x-forwarded-for': '203.0.113.9, 198.51.100.7' }), { ip: '198.51.100.7', proto: 'http' }, 'a spoofed first hop is not the client')
  t.strictSame(await clientOf(loopback, { 'x-forwarded-for': '203.0.113.9, 198.51.100.7, 127.0.0.1' }), { ip: '198.51.100.7', proto: 'http' }, 'trusted hops are passed over')
  // A hop that is no address ends the chain: the hops before it may be the client's own words, and
  // taken as its address they would let it choose a new one for each sign-in it fails.
  t.strictSame(await clientOf(loopback, { 'x-forwarded-for': '198.51.100.7, unknown' }), { ip: '127.0.0.1', proto: 'http' }, 'a hop that is no address: the proxy that wrote it is the client')
  t.strictSame(await clientOf(loopback, { 'x-forwarded-for': '203.0.113.9, 198.51.100.7:5555' }), { ip: '127.0.0.1', proto: 'http' }, 'an address with a port is none either')
  t.strictSame(await clientOf(loopback, { 'x-forwarded-for': '203.0.113.9, unknown, 127.0.0.1' }), { ip: '127.0.0.1', proto: 'http' }, 'nor is what lies before it behind a trusted hop')
  t.strictSame(await clientOf(loopback, { 'x-forwarded-for': '198.51.100.7, x","event":"forged' }), { ip: '127.0.0.1', proto: 'http' }, 'one that would break the access log line is never logged')
  t.strictSame(await clientOf(new BlockList(), { 'x-forwarded-for': '203.0.113.9' }), { ip: '127.0.0.1', proto: 'http' }, 'an untrusted peer is the client, whatever it says')

  // The operator hears of it once: every client of such a proxy now counts as the proxy.
  const { clients, logged } = await clientsOf(loopback, { 'x-forwarded-for': '198.51.100.7' }, { 'x-forwarded-for': `unknown${'x'.repeat(100)}` }, { 'x-forwarded-for': '203.0.113.9:5555' })
  t.strictSame(clients, [{ ip: '198.51.100.7', proto: 'http' }, { ip: '127.0.0.1', proto: 'http' }, { ip: '127.0.0.1', proto: 'http' }], 'the clients')
  t.match(logged, [{ event: 'http.forwarded_unread', proxy: '127.0.0.1', hop: `unknown${'x'.repeat(57)}`, note: /TRUST_PROXY/ }], 'one line, at the first hop that is no address (its first 64 characters)')
  t.equal(logged[0]?.hop, `unknown${'x'.repeat(57)}`, 'cut to 64 characters')
  t.equal(logged.length, 1, 'and no more')
})

t.test('a request the parser refuses is answered with Vary: Origin like any other answer to an /api/ request', async (t) => {
  const cases: [string, string, number][] = [
    ['a URL past the 16 KiB header limit', `GET /api/thing?${'x'.repeat(20_000)} HTTP/1.1\r\nHost: a\r\n\r\n`, 431],
    ['two different Content-Lengths', 'POST /api/any-json HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\nContent-Length: 5\r\n\r\n{}', 400],
  ]
  for (const [label, bytes, status] of cases) {
    const [head] = (await rawBytes(port, bytes)).split('\r\n\r\n')
    t.match(head, new RegExp(`^HTTP/1\\.1 ${status} `), `${label}: ${status}`)
    t.match(head, /\r\nvary: Origin\r\n/i, `${label}: Vary: Origin (CONTRACT §2)`)
  }
})

t.test('closeGracefully cuts a request that never completes once the grace is over, after other connections came and went', { timeout: 30_000 }, async (t) => {
  const logged: Record<string, unknown>[] = []
  const other = createServer({ router, origins: [], trustProxy: new BlockList(), log: (e) => logged.push(e) })
  await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve))
  const otherPort = (other.address() as AddressInfo).port
  // Connections that are over before the shutdown: each answered, then closed by the client.
  for (let i = 0; i < 3; i++) {
    const done = await rawRequest(`http://127.0.0.1:${otherPort}`, 'GET', '/api/thing', { connection: 'close' })
    t.equal(done.status, 200)
  }
  // A body that never comes: its request is cut when the grace runs out.
  const socket = net.connect(otherPort, '127.0.0.1')
  const cut = new Promise<string>((resolve) => {
    let got = ''
    socket.setEncoding('utf8').on('data', (d: string) => (got += d)).on('close', () => resolve(got)).on('error', () => {})
  })
  const before = held
  await new Promise<void>((resolve) => socket.write('POST /api/held HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"a', () => resolve()))
  while (held === before) await sleep(20)
  await closeGracefully(other, 300)
  t.equal(await cut, '', 'the request cut short gets no answer: its connection is closed')
  t.match(logged.filter((e) => e.event === 'http.request' && e.path === '/api/held'), [{ status: 499 }], 'and it is logged as 499 by the time closeGracefully resolves')
})

t.test('a request asking for an upgrade not offered is served as the request it is: its header bytes and HTTP version kept', async (t) => {
  const plain = createServer({ router, origins: [], trustProxy: new BlockList(), log: () => {} })
  // What the platform and the bridge do with an Upgrade they do not serve (terminal-proxy, bridge server).
  plain.on('upgrade', (req, socket, head: Buffer) => reinject(plain, req, socket, head))
  await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve))
  t.teardown(() => closeGracefully(plain, 1000))
  const exchange = (bytes: Buffer): Promise<string> => rawBytes((plain.address() as AddressInfo).port, bytes)
  const answerBody = (text: string): unknown => JSON.parse(Buffer.from(text.slice(text.indexOf('\r\n\r\n') + 4), 'latin1').toString('utf8'))
  // A header value with a byte outside ASCII (é in Latin-1): Node reads it as Latin-1, so must the request read anew.
  const head = (upgrade: boolean, version = '1.1', host = true): Buffer => Buffer.from(
    `GET /api/echo HTTP/${version}\r\n${host ? 'Host: a\r\n' : ''}Connection: ${upgrade ? 'Upgrade, ' : ''}close\r\n` +
      `${upgrade ? 'Upgrade: h2c\r\n' : ''}X-Name: caf\xe9\r\n\r\n`,
    'latin1',
  )
  const direct = await exchange(head(false))
  const upgraded = await exchange(head(true))
  t.match(upgraded, /^HTTP\/1\.1 200 /, 'answered as plain HTTP/1.1')
  t.match(upgraded, /\r\nconnection: close\r\n/i, 'the Connection option beside Upgrade (close) is kept: the answer says so')
  t.strictSame(answerBody(upgraded), answerBody(direct), 'the handler sees the same header as without the Upgrade')
  t.strictSame(answerBody(upgraded), { success: true, name: 'caf\u00e9', version: '1.1' })
  // HTTP/1.0 may leave Host out (RFC 9112 §3.2): read anew, the request must stay HTTP/1.0.
  const old = await exchange(head(true, '1.0', false))
  t.match(old, /^HTTP\/1\.1 200 /, 'HTTP/1.0 without Host: served, not 400')
  t.strictSame(answerBody(old), { success: true, name: 'caf\u00e9', version: '1.0' })
})

t.test('a page answered 405 in HTML still says Allow, as the JSON one does', async (t) => {
  const res = await rawRequest(base, 'POST', '/flat-page', { 'content-length': '0' })
  t.equal(res.status, 405)
  t.equal(res.headers['content-type'], 'text/html; charset=utf-8', 'a page, not JSON')
  t.equal(res.headers['allow'], 'GET, HEAD', 'Allow lists the methods (CONTRACT §4)')
  t.match(res.body.toString(), /405 POST not allowed/)
})
