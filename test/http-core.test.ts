import t from 'tap'
import { setTimeout as sleep } from 'node:timers/promises'
import net, { type AddressInfo } from 'node:net'
import { BlockList } from 'node:net'
import { Compile, Type } from '../lib/typebox.js'
import { Router } from '../lib/http/router.js'
import { createServer } from '../lib/http/server.js'
import { closeGracefully } from '../lib/http/close.js'
import { readBody, readJson } from '../lib/http/body.js'
import { json, html } from '../lib/http/reply.js'
import { HttpError, rateLimited } from '../lib/http/errors.js'
import { jsonOf, rawRequest } from './helpers/raw-http.js'

const ORIGIN = 'https://play.example.com'
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const NameBody = Compile(Type.Object({ name: Type.String({ minLength: 1 }) }, { additionalProperties: false }))

// A test router on lib/http: one route of each kind the core must handle.
let counted = 0
const router = new Router()
  .add('GET', '/api/thing', ({ res }) => json(res, 200, { success: true }))
  .add('POST', '/api/things', async ({ req, res }) => json(res, 200, { success: true, got: await readBody(req, NameBody) }))
  .add('PUT', '/api/things', ({ res }) => json(res, 200, { success: true }))
  .add('POST', '/api/any-json', async ({ req, res }) => json(res, 200, { success: true, got: await readJson(req) }))
  .add('POST', '/api/optional', async ({ req, res }) => json(res, 200, { success: true, got: (await readJson(req, { optional: true })) ?? null }))
  .add('GET', '/api/boom', () => {
    throw new Error('database password is hunter2')
  })
  .add('GET', '/api/async-boom', async () => {
    throw new TypeError('cannot read properties of undefined')
  })
  .add('GET', '/api/teapot', () => {
    throw new HttpError(418, 'TEAPOT', 'short and stout')
  })
  .add('GET', '/api/limited', ({ url }) => {
    throw rateLimited('slow down', Number(url.searchParams.get('ms')))
  })
  .add('GET', '/page', ({ res }) => html(res, 200, '<p>page</p>'))
  .add('GET', '/page/boom', () => {
    throw new Error('secret page failure')
  })
  .add('POST', '/api/count', ({ res }) => json(res, 200, { success: true, count: ++counted }))
  .add('GET', '/api/slow', async ({ res }) => {
    await sleep(400)
    json(res, 200, { success: true, slow: true })
  })

const logs: Record<string, unknown>[] = []
const server = createServer({ router, origins: [ORIGIN], trustProxy: new BlockList(), log: (e) => logs.push(e) })
let base = ''
t.before(() => new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => {
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  resolve()
})))
t.teardown(() => closeGracefully(server, 1000))

const post = (path: string, payload: string | Buffer, headers: Record<string, string> = {}) =>
  rawRequest(base, 'POST', path, { 'content-type': 'application/json', ...headers }, payload)

t.test('unknown routes: 404 NOT_FOUND as JSON under /api/, as HTML elsewhere', async (t) => {
  const api = await rawRequest(base, 'GET', '/api/nothing-here')
  t.equal(api.status, 404)
  t.equal(api.headers['content-type'], 'application/json; charset=utf-8')
  t.strictSame(jsonOf(api), { error: 'no route for /api/nothing-here', code: 'NOT_FOUND' })
  const page = await rawRequest(base, 'GET', '/nothing-here')
  t.equal(page.status, 404)
  t.equal(page.headers['content-type'], 'text/html; charset=utf-8')
  t.equal(page.headers['x-content-type-options'], 'nosniff', 'pages are taken as HTML, never sniffed')
  t.match(page.body.toString(), /^<!doctype html>.*404 no route for \/nothing-here/s)
  // A page a phone shows at its width, in English, and no second request for /favicon.ico.
  t.match(page.body.toString(), /^<!doctype html><html lang="en"><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><link rel="icon" href="data:,">/)
  t.match(page.body.toString(), /<h1 style="overflow-wrap: anywhere">404 no route for \/nothing-here<\/h1>/, 'a long path wraps')
})

/** Send several requests on one kept-alive connection, one after the other; the answers' status lines, and whether it stayed open. */
function sameConnection(requests: string[]): Promise<{ statuses: string[]; open: boolean }> {
  const port = Number(new URL(base).port)
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1')
    const statuses: string[] = []
    let text = ''
    let closed = false
    // A reset (the server closing on an unread upload) ends the connection like a close: the
    // answers so far are what the test compares.
    socket.on('close', () => (closed = true)).on('error', () => {
      closed = true
      resolve({ statuses, open: false })
    })
    const next = (): void => {
      const request = requests[statuses.length]
      if (request === undefined || closed) return resolve({ statuses, open: !closed })
      text = ''
      socket.write(request)
    }
    socket.setEncoding('utf8').on('data', (d: string) => {
      text += d
      const head = text.indexOf('\r\n\r\n')
      const length = /\r\ncontent-length: (\d+)/i.exec(text)
      if (head < 0 || !length || text.length - head - 4 < Number(length[1])) return
      statuses.push(text.slice(0, text.indexOf('\r\n')))
      setTimeout(next, 50)
    })
    socket.on('close', () => resolve({ statuses, open: false }))
    next()
  })
}

t.test('an error answered before any body was read keeps the connection when the request had no body', async (t) => {
  const get = (path: string): string => `GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`
  const after = await sameConnection([get('/api/nope'), get('/api/thing'), get('http://[/'), get('/api/boom'), get('/api/thing')])
  t.same(after.statuses, ['HTTP/1.1 404 Not Found', 'HTTP/1.1 200 OK', 'HTTP/1.1 400 Bad Request', 'HTTP/1.1 500 Internal Server Error', 'HTTP/1.1 200 OK'])
  t.equal(after.open, true, 'the connection is still open')
  const big = JSON.stringify({ name: 'x'.repeat(70_000) })
  const upload = await sameConnection([
    `POST /api/things HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(big)}\r\n\r\n${big}`,
    get('/api/thing'),
  ])
  t.same(upload.statuses, ['HTTP/1.1 413 Payload Too Large'], 'a refused upload still ends its connection')
  t.equal(upload.open, false)
})

t.test('an error answered from the headers while a body is on its way says Connection: close, and keeps its word', async (t) => {
  const withBody = (head: string, body: string): string => `${head}\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`
  const cases: [string, string, string][] = [
    ['an unknown route', withBody('POST /api/nope HTTP/1.1', '{"a":1}'), '404'],
    ['another method', withBody('DELETE /api/things HTTP/1.1', '{"a":1}'), '405'],
    ['a foreign origin', withBody('POST /api/things HTTP/1.1\r\nOrigin: https://evil.example', '{"name":"kit"}'), '403'],
    ['chunked, to an unknown route', 'POST /api/nope HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n7\r\n{"a":1}\r\n0\r\n\r\n', '404'],
  ]
  for (const [label, request, status] of cases) {
    // The next request follows at once, on the same connection, as a client reusing it would send it.
    const answer = await rawExchange(request + 'GET /api/thing HTTP/1.1\r\nHost: x\r\n\r\n')
    const answers = answer.split(/(?=HTTP\/1\.1 )/)
    t.same(answers.map((a) => a.slice(9, 12)), [status], `${label}: one answer, and the connection closed`)
    t.match(answers[0], /\r\nconnection: close\r\n/i, `${label}: the answer says so`)
    t.notMatch(answers[0], /keep-alive/i, `${label}: and promises nothing else`)
  }
  // A body the handler read keeps the connection, whatever the answer.
  const read = await sameConnection([withBody('POST /api/things HTTP/1.1', '{"name":5}'), 'GET /api/thing HTTP/1.1\r\nHost: x\r\n\r\n'])
  t.same(read.statuses, ['HTTP/1.1 400 Bad Request', 'HTTP/1.1 200 OK'])
  t.equal(read.open, true)
})

t.test('a target starting with // is a path, never a host: //evil.example/api/thing is not /api/thing', async (t) => {
  const res = await rawRequest(base, 'GET', '//evil.example/api/thing')
  t.equal(res.status, 404)
  t.match(res.body.toString(), /404 no route for \/\/evil\.example\/api\/thing/)
  const double = await rawRequest(base, 'GET', '//api/thing')
  t.equal(double.status, 404, '//api/thing is not /api/thing either')
  t.match(double.body.toString(), /no route for \/\/api\/thing/)
  const query = await rawRequest(base, 'GET', '//evil.example/api/thing?x=1')
  t.equal(query.status, 404, 'with a query too')
  t.equal((await rawRequest(base, 'GET', '/api/thing?x=//evil.example/')).status, 200, 'a // in the query changes nothing')
})

t.test('a known path with another method: 405 METHOD_NOT_ALLOWED with Allow', async (t) => {
  const res = await rawRequest(base, 'DELETE', '/api/things')
  t.equal(res.status, 405)
  t.equal(res.headers['allow'], 'POST, PUT')
  t.strictSame(jsonOf(res), { error: 'DELETE not allowed', code: 'METHOD_NOT_ALLOWED' })
  const get = await post('/api/thing', '{}')
  t.equal(get.headers['allow'], 'GET, HEAD')
})

t.test('the router: fixed paths before parameters whatever the method, HEAD as GET, 405 from both kinds of route', async (t) => {
  const seen: string[] = []
  const handler = (name: string) => () => seen.push(name)
  const r = new Router()
    .add('GET', '/api/boards/:id', handler('board'))
    .add('POST', '/api/boards/submit', handler('submit'))
    .add('GET', '/api/boards/top', handler('top'))
    .add('DELETE', '/api/boards/:id/records/:owner', handler('record'))
  const found = (method: string, path: string) => {
    const match = r.find(method, path)
    if (match.kind !== 'found') return match
    match.handler({} as never)
    return { name: seen.at(-1), params: { ...match.params } }
  }
  t.strictSame(found('GET', '/api/boards/top'), { name: 'top', params: {} }, 'a fixed path wins over a parameter route')
  t.strictSame(found('HEAD', '/api/boards/top'), { name: 'top', params: {} })
  t.strictSame(r.find('GET', '/api/boards/submit'), { kind: 'method', allow: ['POST'] }, 'a fixed path is that resource whatever the method: 405, no fall-through to parameters')
  t.strictSame(found('POST', '/api/boards/submit'), { name: 'submit', params: {} })
  t.strictSame(found('GET', '/api/boards/caf%C3%A9%2Fx'), { name: 'board', params: { id: 'café/x' } }, 'parameters are decoded')
  t.strictSame(found('DELETE', '/api/boards/a/records/b'), { name: 'record', params: { id: 'a', owner: 'b' } })
  t.strictSame(r.find('PUT', '/api/boards/submit'), { kind: 'method', allow: ['POST'] }, 'Allow names the fixed path\'s methods')
  t.strictSame(r.find('PUT', '/api/boards/x'), { kind: 'method', allow: ['GET', 'HEAD'] })
  t.strictSame(found('GET', '/api/boards/%E0%A4%A'), { name: 'board', params: { id: '%E0%A4%A' } }, 'a malformed escape is kept as written (an id that names nothing)')
  t.strictSame(r.find('GET', '/api/boards/'), { kind: 'none' }, 'an empty segment is no parameter')
  t.strictSame(r.find('GET', '/api/boards'), { kind: 'none' })
})

t.test('JSON bodies: 200, 413, 415, 400 INVALID_JSON, 400 VALIDATION_FAILED', async (t) => {
  const ok = await post('/api/things', '{"name":"kit"}')
  t.equal(ok.status, 200)
  t.strictSame(jsonOf(ok), { success: true, got: { name: 'kit' } })

  const big = JSON.stringify({ name: 'x'.repeat(70_000) })
  const tooLarge = await post('/api/things', big)
  t.equal(tooLarge.status, 413)
  t.strictSame(jsonOf(tooLarge), { error: 'body larger than 65536 bytes', code: 'PAYLOAD_TOO_LARGE' })
  const chunked = await rawRequest(base, 'POST', '/api/things', { 'content-type': 'application/json', 'transfer-encoding': 'chunked' }, big)
  t.equal(chunked.status, 413, 'also when no length is announced')
  const atLimit = await post('/api/things', JSON.stringify({ name: 'y'.repeat(65_536 - 11) }))
  t.equal(atLimit.status, 200, 'exactly 65,536 bytes is accepted')

  const plain = await post('/api/things', 'name=kit', { 'content-type': 'text/plain' })
  t.equal(plain.status, 415)
  t.strictSame(jsonOf(plain), { error: 'body must be application/json', code: 'UNSUPPORTED_MEDIA_TYPE' })
  const none = await rawRequest(base, 'POST', '/api/things', {}, '{"name":"kit"}')
  t.equal(none.status, 415, 'no Content-Type')
  // Two Content-Type lines: Node keeps the first, a proxy before it may have read the last; the
  // body is taken as neither, even when both say the same.
  for (const types of [['application/json', 'text/plain'], ['text/plain', 'application/json'], ['application/json', 'application/json']]) {
    const kit = '{"name":"kit"}'
    const lines = types.map((type, i) => `${i ? 'content-type' : 'Content-Type'}: ${type}\r\n`).join('')
    const answer = await rawExchange(`POST /api/things HTTP/1.1\r\nHost: a\r\n${lines}Content-Length: ${kit.length}\r\nConnection: close\r\n\r\n${kit}`)
    const [head, text] = answer.split('\r\n\r\n')
    t.match(head, /^HTTP\/1\.1 415 /, `Content-Type ${types.join(', then ')}: 415`)
    t.strictSame(JSON.parse(text!), { error: 'the Content-Type header is repeated', code: 'UNSUPPORTED_MEDIA_TYPE' })
  }
  for (const headers of [{}, { 'content-type': 'text/plain' }, { 'content-type': 'application/json' }] as Record<string, string>[]) {
    const empty = await rawRequest(base, 'POST', '/api/things', headers)
    t.strictSame([empty.status, jsonOf(empty)], [400, { error: 'the request needs a JSON body', code: 'INVALID_JSON' }], `no body at all, ${JSON.stringify(headers)}: 400, not 415`)
    const emptyChunked = await rawRequest(base, 'POST', '/api/things', { ...headers, 'transfer-encoding': 'chunked' }, '')
    t.strictSame([emptyChunked.status, jsonOf(emptyChunked)], [400, { error: 'the request needs a JSON body', code: 'INVALID_JSON' }], `an empty chunked body, ${JSON.stringify(headers)}: the same`)
  }

  const broken = await post('/api/things', '{"name": ')
  t.equal(broken.status, 400)
  t.strictSame(jsonOf(broken), { error: 'body is not valid JSON', code: 'INVALID_JSON' })

  const invalid = await post('/api/things', '{"name": "", "extra": 1}')
  t.equal(invalid.status, 400)
  t.match(jsonOf(invalid), { error: 'request does not match the schema', code: 'VALIDATION_FAILED', details: Array })
  const details = (jsonOf(invalid) as { details: { path: string; message: string }[] }).details
  t.ok(details.some((d) => d.path === '/name'), 'details name the bad field')
  for (const d of details) t.strictSame(Object.keys(d).sort(), ['message', 'path'])
  // TypeBox stops after a few errors, all of them on the extra keys once there are many.
  for (const extras of [1, 5, 100]) {
    const keys = Object.fromEntries(Array.from({ length: extras }, (_, i) => [`k${i}`, i]))
    const many = await post('/api/things', JSON.stringify({ name: 'kit', ...keys }))
    t.strictSame(
      [many.status, jsonOf(many)],
      [400, { error: 'request does not match the schema', code: 'VALIDATION_FAILED', details: [{ path: '/', message: 'must not have additional properties' }] }],
      `${extras} extra keys: one detail that says so`,
    )
  }
})

t.test('JSON bodies are UTF-8: invalid bytes are 400 INVALID_JSON, another charset 415, empty parameters pass', async (t) => {
  // Two different invalid bytes must not both become U+FFFD and pass as the same text.
  for (const byte of [0xff, 0xfe, 0xe9]) {
    const bad = await post('/api/things', Buffer.concat([Buffer.from('{"name":"caf'), Buffer.from([byte]), Buffer.from('"}')]))
    t.equal(bad.status, 400, `byte 0x${byte.toString(16)}`)
    t.strictSame(jsonOf(bad), { error: 'body is not valid UTF-8', code: 'INVALID_JSON' })
  }
  // RFC 8259 §8.1: a parser may ignore a leading byte-order mark; one anywhere else is not JSON.
  const bom = Buffer.from([0xef, 0xbb, 0xbf])
  const marked = await post('/api/things', Buffer.concat([bom, Buffer.from('{"name":"kit"}')]))
  t.strictSame([marked.status, jsonOf(marked)], [200, { success: true, got: { name: 'kit' } }], 'a leading BOM is skipped')
  for (const misplaced of [Buffer.concat([bom, bom, Buffer.from('{"name":"kit"}')]), Buffer.concat([Buffer.from(' '), bom, Buffer.from('{"name":"kit"}')])]) {
    const res = await post('/api/things', misplaced)
    t.strictSame([res.status, jsonOf(res)], [400, { error: 'body is not valid JSON', code: 'INVALID_JSON' }], 'a BOM past the first bytes is not JSON')
  }
  const latin1 = await post('/api/things', '{"name":"kit"}', { 'content-type': 'application/json; charset=latin1' })
  t.equal(latin1.status, 415)
  t.strictSame(jsonOf(latin1), { error: 'a JSON body must be UTF-8 (charset=utf-8 or none)', code: 'UNSUPPORTED_MEDIA_TYPE' })
  for (const type of ['application/json; charset=UTF-8', 'application/json;', 'application/json ; ', 'Application/JSON;; charset="utf-8"']) {
    const ok = await post('/api/things', '{"name":"café"}', { 'content-type': type })
    t.equal(ok.status, 200, type)
    t.strictSame(jsonOf(ok), { success: true, got: { name: 'café' } })
  }
  const other = await post('/api/things', '{"name":"kit"}', { 'content-type': 'application/json-patch+json' })
  t.equal(other.status, 415, 'another JSON media type')
})

t.test('a charset parameter given twice is 415, whichever comes first: a proxy may read the other one', async (t) => {
  for (const type of ['application/json; charset=utf-16; charset=utf-8', 'application/json; charset=utf-8; CHARSET=utf-8']) {
    const res = await post('/api/things', '{"name":"kit"}', { 'content-type': type })
    t.strictSame([res.status, jsonOf(res)], [415, { error: 'the charset parameter is repeated', code: 'UNSUPPORTED_MEDIA_TYPE' }], type)
  }
})

t.test('an optional body: none, an empty chunked one without a type, or JSON; anything else is refused', async (t) => {
  const none = await rawRequest(base, 'POST', '/api/optional', { 'content-length': '0' })
  t.strictSame([none.status, jsonOf(none)], [200, { success: true, got: null }])
  const emptyChunked = await rawRequest(base, 'POST', '/api/optional', { 'transfer-encoding': 'chunked' }, '')
  t.strictSame([emptyChunked.status, jsonOf(emptyChunked)], [200, { success: true, got: null }], 'empty chunked body, no Content-Type')
  const chunkedJson = await rawRequest(base, 'POST', '/api/optional', { 'transfer-encoding': 'chunked', 'content-type': 'application/json' }, '{"a":1}')
  t.strictSame([chunkedJson.status, jsonOf(chunkedJson)], [200, { success: true, got: { a: 1 } }])
  const chunkedText = await rawRequest(base, 'POST', '/api/optional', { 'transfer-encoding': 'chunked', 'content-type': 'text/plain' }, 'a=1')
  t.strictSame([chunkedText.status, jsonOf(chunkedText)], [415, { error: 'body must be application/json', code: 'UNSUPPORTED_MEDIA_TYPE' }])
  const untyped = await rawRequest(base, 'POST', '/api/optional', { 'transfer-encoding': 'chunked' }, '{"a":1}')
  t.equal(untyped.status, 415, 'a non-empty body still needs its type')
})

t.test('numbers JSON.parse would change are refused with 400 VALIDATION_FAILED; exact ones pass as written', async (t) => {
  const refused = ['9007199254740990.5', '1e-400', '1.0000000000000001', '1e400', '-1e400', '12345678901234567890', '9007199254740992', '-9007199254740993']
  for (const n of refused) {
    for (const text of [`{"n":${n}}`, `{"m":{"deep":[1,${n}]}}`]) {
      const res = await post('/api/any-json', text)
      t.equal(res.status, 400, text)
      t.strictSame(jsonOf(res), { error: `the number ${n} cannot be kept exactly`, code: 'VALIDATION_FAILED' }, text)
    }
  }
  const kept: [string, unknown][] = [
    ['{"n":2.0}', { n: 2 }],
    ['{"n":1e2}', { n: 100 }],
    ['{"n":1.5e1}', { n: 15 }],
    ['{"n":0.1}', { n: 0.1 }],
    ['{"n":-0.25e-3}', { n: -0.00025 }],
    ['{"n":9007199254740991}', { n: 9007199254740991 }],
    ['{"n":-9007199254740991}', { n: -9007199254740991 }],
    ['{"n":0.000}', { n: 0 }],
    // Numbers inside strings are text, escaped quotes and backslashes included.
    [JSON.stringify({ s: '1e400 and 9007199254740990.5', e: '\\"1e400 \\' }), { s: '1e400 and 9007199254740990.5', e: '\\"1e400 \\' }],
  ]
  for (const [text, got] of kept) {
    const res = await post('/api/any-json', text)
    t.strictSame([res.status, jsonOf(res)], [200, { success: true, got }], text)
  }
})

/** Bytes as written to a fresh connection; resolves with everything the server sends until it closes. */
function rawExchange(bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(new URL(base).port), '127.0.0.1', () => socket.write(bytes))
    let got = ''
    socket.setEncoding('utf8').on('data', (d: string) => (got += d)).on('close', () => resolve(got)).on('error', reject)
  })
}

t.test('requests the HTTP parser refuses still get the contract error body, a request id and a closed connection', async (t) => {
  const cases: [string, string, number, string][] = [
    ['a URL past the 16 KiB header limit', `GET /api/thing?${'x'.repeat(20_000)} HTTP/1.1\r\nHost: a\r\n\r\n`, 431, 'HEADERS_TOO_LARGE'],
    ['two different Content-Lengths', 'POST /api/things HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\nContent-Length: 5\r\n\r\n{}', 400, 'BAD_REQUEST'],
    ['not HTTP at all', 'HELLO THERE\r\n\r\n', 400, 'BAD_REQUEST'],
    ['CONNECT (no tunnels here)', 'CONNECT 127.0.0.1:443 HTTP/1.1\r\nHost: 127.0.0.1:443\r\n\r\n', 400, 'BAD_REQUEST'],
  ]
  for (const [label, bytes, status, code] of cases) {
    const from = logs.length
    const answer = await rawExchange(bytes)
    const [head, body] = answer.split('\r\n\r\n')
    t.match(head, new RegExp(`^HTTP/1\\.1 ${status} `), `${label}: status`)
    t.match(head, /\r\ncontent-type: application\/json; charset=utf-8\r\n/i, `${label}: JSON`)
    t.match(head, /\r\nconnection: close/i, `${label}: the connection closes`)
    t.match(head, /\r\nx-content-type-options: nosniff\r\n/i, `${label}: nosniff`)
    const id = /\r\nx-request-id: ([0-9a-f-]+)/i.exec(head!)?.[1]
    t.match(id, UUID, `${label}: a request id`)
    t.strictSame(Object.keys(JSON.parse(body!)).sort(), ['code', 'error'], `${label}: the contract's body`)
    t.equal(JSON.parse(body!).code, code, label)
    t.match(logs.slice(from).find((e) => e.event === 'http.client_error'), { id, status }, `${label}: logged with its id`)
  }
  const after = await rawRequest(base, 'GET', '/api/thing')
  t.equal(after.status, 200, 'the server goes on serving')
})

t.test('requests that came whole before bytes the parser refuses are answered first, then the refusal', async (t) => {
  const kit = '{"name":"kit"}'
  const valid = `POST /api/things HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: ${kit.length}\r\n\r\n${kit}`
  const cases: [string, string, string[]][] = [
    ['a request, then bytes that are not HTTP', valid + 'GARBAGE\r\n\r\n', ['200', '400']],
    ['a body longer than its Content-Length (the rest is read as a request)', valid + ' trailing bytes\r\n\r\n', ['200', '400']],
    ['a slow request and a quick one, then two different Content-Lengths',
      'GET /api/slow HTTP/1.1\r\nHost: a\r\n\r\n' + valid + 'GET /api/thing HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n',
      ['200', '200', '400']],
    // Answered at once, the first leaves the second queued: that one must not be lost either.
    ['a quick request, a slow one, then garbage', valid + 'GET /api/slow HTTP/1.1\r\nHost: a\r\n\r\nGARBAGE\r\n\r\n', ['200', '200', '400']],
    // 30: past 32 unanswered, a request is refused (http-limits.test).
    ['30 quick requests, then garbage', 'GET /api/thing HTTP/1.1\r\nHost: a\r\n\r\n'.repeat(30) + 'GARBAGE\r\n\r\n', [...Array(30).fill('200'), '400']],
    ['a request, then CONNECT', valid + 'CONNECT 127.0.0.1:443 HTTP/1.1\r\nHost: 127.0.0.1:443\r\n\r\n', ['200', '400']],
  ]
  for (const [label, bytes, statuses] of cases) {
    const answer = await rawExchange(bytes)
    const answers = answer.split(/(?=HTTP\/1\.1 )/)
    t.same(answers.map((a) => a.slice(9, 12)), statuses, `${label}: each answered, in order`)
    t.match(answers.at(-1), /"code":"BAD_REQUEST"\}$/, `${label}: the refusal last`)
    t.match(answers.at(-1), /\r\nconnection: close\r\n/i, `${label}: then the connection closes`)
    if (label.startsWith('a slow')) t.match(answers[0], /"slow":true/, `${label}: the slow answer first`)
  }
  // A chunked body the parser refuses midway: its request cannot be answered, only refused.
  const broken = await rawExchange('POST /api/things HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{"nam\r\nzz\r\n')
  t.match(broken, /^HTTP\/1\.1 400 [^]*"code":"BAD_REQUEST"\}$/, 'a broken chunked body: 400 alone')
})

/** Write `bytes` on a new connection, then leave `afterMs` later: a plain close or a reset. */
function writeThenLeave(bytes: string, afterMs: number, how: 'close' | 'reset'): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(new URL(base).port), '127.0.0.1', () => {
      socket.write(bytes)
      setTimeout(() => (how === 'reset' ? socket.resetAndDestroy() : socket.destroy()), afterMs)
    })
    socket.on('close', () => resolve()).on('error', reject)
  })
}

t.test('a client that closes mid-body is logged as 499, not as a 500 with a stack or a 400 refusal', async (t) => {
  const from = logs.length
  await writeThenLeave('POST /api/any-json HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"name":"ki', 100, 'close')
  for (let i = 0; i < 50 && !logs.slice(from).some((e) => e.event === 'http.request' && e.path === '/api/any-json'); i++) await sleep(20)
  await sleep(100)
  const lines = logs.slice(from)
  t.match(lines.filter((e) => e.event === 'http.request' && e.path === '/api/any-json'), [{ method: 'POST', path: '/api/any-json', status: 499 }], 'one access-log line, 499')
  t.same(lines.filter((e) => e.event === 'http.error'), [], 'no http.error')
  t.same(lines.filter((e) => e.event === 'http.client_error'), [], 'and no refusal logged beside it: the client left, nothing was refused')
})

t.test('a client that half-closes mid-request still gets the answers to the requests that came whole, and no refusal', async (t) => {
  const from = logs.length
  const got = await new Promise<string>((resolve, reject) => {
    const socket = net.connect({ port: Number(new URL(base).port), host: '127.0.0.1', allowHalfOpen: true }, () => {
      socket.end('GET /api/slow HTTP/1.1\r\nHost: a\r\n\r\nPOST /api/any-json HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"na')
    })
    let text = ''
    socket.setEncoding('utf8').on('data', (d: string) => (text += d)).on('close', () => resolve(text)).on('error', reject)
  })
  t.equal(got.match(/^HTTP\/1\.1 /gm)?.length, 1, 'one answer')
  t.match(got, /^HTTP\/1\.1 200 /, 'the whole request is answered')
  for (let i = 0; i < 50 && !logs.slice(from).some((e) => e.event === 'http.request' && e.path === '/api/any-json'); i++) await sleep(20)
  const lines = logs.slice(from)
  t.match(lines.filter((e) => e.event === 'http.request'), [{ path: '/api/slow', status: 200 }, { path: '/api/any-json', status: 499 }], 'the access log: 200, then 499 for the one cut short')
  t.same(lines.filter((e) => e.event === 'http.client_error'), [], 'no refusal logged')
})

t.test('Expect: 100-continue gets 100 only for a body within the limit; a larger one gets its 413 without being asked for', async (t) => {
  const port = Number(new URL(base).port)
  const firstAnswer = (head: string): Promise<{ socket: net.Socket; first: string }> => new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(head))
    socket.setEncoding('utf8').once('data', (d: string) => resolve({ socket, first: d })).on('error', reject)
  })
  // Send the body the 100 asked for; everything the connection then said, from its first answer.
  const sendBody = (asked: { socket: net.Socket; first: string }, body: string): Promise<string> => new Promise((resolve) => {
    let text = asked.first
    asked.socket.on('data', (d: string) => (text += d)).on('close', () => resolve(text))
    asked.socket.write(body)
  })
  const big = await firstAnswer('POST /api/things HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 100000\r\nExpect: 100-continue\r\n\r\n')
  t.match(big.first, /^HTTP\/1\.1 413 /, 'the refusal comes first, no 100')
  t.match(big.first, /"code":"PAYLOAD_TOO_LARGE"/)
  big.socket.destroy()
  const kit = '{"name":"kit"}'
  const small = await firstAnswer(`POST /api/things HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: ${kit.length}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n`)
  t.match(small.first, /^HTTP\/1\.1 100 Continue\r\n\r\n/, 'a body within the limit is asked for')
  const rest = await sendBody(small, kit)
  t.match(rest, /HTTP\/1\.1 200 [^]*\{"success":true,"got":\{"name":"kit"\}\}$/, 'and read')
  // The limit is inclusive: a body of exactly 65,536 bytes is read (CONTRACT §4: over it is 413), so it is asked for too.
  const exact = JSON.stringify({ name: 'y'.repeat(65_536 - 11) })
  const atLimit = await firstAnswer(`POST /api/things HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: ${exact.length}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n`)
  t.match(atLimit.first, /^HTTP\/1\.1 100 Continue\r\n\r\n/, 'a body of exactly 65,536 bytes is asked for')
  const atLimitRest = await sendBody(atLimit, exact)
  t.match(atLimitRest, /HTTP\/1\.1 200 /, 'and read')
})

t.test('a request whose body never comes gets 408, and the access log says 408 for it', async (t) => {
  const own: Record<string, unknown>[] = []
  const quick = createServer({ router, origins: [ORIGIN], trustProxy: new BlockList(), log: (e) => own.push(e) })
  quick.headersTimeout = 500
  quick.requestTimeout = 1000
  await new Promise<void>((resolve) => quick.listen(0, '127.0.0.1', resolve))
  t.teardown(() => closeGracefully(quick, 1000))
  const answer = await new Promise<string>((resolve, reject) => {
    const socket = net.connect((quick.address() as AddressInfo).port, '127.0.0.1', () =>
      socket.write('POST /api/things HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"na'))
    let got = ''
    socket.setEncoding('utf8').on('data', (d: string) => (got += d)).on('close', () => resolve(got)).on('error', reject)
  })
  t.match(answer, /^HTTP\/1\.1 408 [^]*"code":"REQUEST_TIMEOUT"\}$/)
  for (let i = 0; i < 50 && !own.some((e) => e.event === 'http.request'); i++) await sleep(20)
  t.match(own.filter((e) => e.event === 'http.request'), [{ method: 'POST', path: '/api/things', status: 408 }], 'the request cut short: 408, not 499')
})

t.test('requests pipelined behind a body refused unread (413) are not run: the 413 says Connection: close and is the last answer', async (t) => {
  const before = counted
  const big = JSON.stringify({ name: 'x'.repeat(70_000) })
  const count = 'POST /api/count HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n'
  for (const framing of ['content-length', 'chunked']) {
    const head = framing === 'chunked'
      ? `POST /api/things HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n${big.length.toString(16)}\r\n${big}\r\n0\r\n\r\n`
      : `POST /api/things HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: ${big.length}\r\n\r\n${big}`
    const answer = await rawExchange(count + head + count + 'GET /api/thing HTTP/1.1\r\nHost: a\r\n\r\n')
    const answers = answer.split(/(?=HTTP\/1\.1 )/)
    t.same(answers.map((a) => a.slice(9, 12)), ['200', '413'], `${framing}: the count, the 413, nothing after`)
    t.match(answers[1], /\r\nconnection: close\r\n/i, `${framing}: the 413 says the connection closes`)
  }
  t.equal(counted - before, 2, 'only the requests before the refused body ran')
})

t.test('a request that came whole is logged 499 when its client leaves, not with the status of a refusal behind it', async (t) => {
  const from = logs.length
  await writeThenLeave('GET /api/slow HTTP/1.1\r\nHost: a\r\n\r\nGARBAGE\r\n\r\n', 50, 'reset')
  const line = (): Record<string, unknown> | undefined => logs.slice(from).find((e) => e.event === 'http.request' && e.path === '/api/slow')
  for (let i = 0; i < 50 && !line(); i++) await sleep(20)
  t.match(line(), { status: 499 })
})

t.test('no Host on HTTP/1.1, or two Host lines, is 400 BAD_REQUEST in JSON; an Expect other than 100-continue is served as usual', async (t) => {
  const noHost = await rawExchange('GET /api/thing HTTP/1.1\r\nConnection: close\r\n\r\n')
  const [head, text] = noHost.split('\r\n\r\n')
  t.match(head, /^HTTP\/1\.1 400 /)
  t.match(head, /\r\ncontent-type: application\/json; charset=utf-8\r\n/i)
  t.match(head, /\r\nvary: Origin\r\n/i)
  t.match(head, /\r\nx-content-type-options: nosniff\r\n/i)
  t.match(/\r\nx-request-id: ([0-9a-f-]+)/i.exec(head!)?.[1], UUID, 'a request id')
  t.strictSame(JSON.parse(text!), { error: 'the Host header is missing', code: 'BAD_REQUEST' })
  for (const [version, hosts] of [['1.1', 'Host: a\r\nHost: evil.example'], ['1.1', 'Host: a\r\nhost: a'], ['1.0', 'HOST: a\r\nHost: b']]) {
    const twice = await rawExchange(`GET /api/thing HTTP/${version}\r\n${hosts}\r\nConnection: close\r\n\r\n`)
    const [twiceHead, twiceText] = twice.split('\r\n\r\n')
    t.match(twiceHead, /^HTTP\/1\.1 400 /, `${hosts} (HTTP/${version}): 400`)
    t.strictSame(JSON.parse(twiceText!), { error: 'the Host header is repeated', code: 'BAD_REQUEST' }, `${hosts}: the contract's body`)
  }
  const http10 = await rawExchange('GET /api/thing HTTP/1.0\r\n\r\n')
  t.match(http10, /^HTTP\/1\.1 200 /, 'HTTP/1.0 may leave Host out')
  const expect = await rawExchange('POST /api/things HTTP/1.1\r\nHost: a\r\nConnection: close\r\nExpect: something-else\r\nContent-Type: application/json\r\nContent-Length: 14\r\n\r\n{"name":"kit"}')
  t.match(expect, /^HTTP\/1\.1 200 /, 'not Node\'s bare 417')
  t.match(expect, /\{"success":true,"got":\{"name":"kit"\}\}$/)
  const refused = await rawExchange('POST /api/things HTTP/1.1\r\nHost: a\r\nConnection: close\r\nExpect: x\r\nOrigin: https://evil.example\r\nContent-Length: 0\r\n\r\n')
  t.match(refused, /^HTTP\/1\.1 403 [^]*\{"error":"origin not allowed","code":"FORBIDDEN_ORIGIN"\}$/, 'and checked as usual')
})

t.test('inputs that made the body checks take quadratic time are answered as any other', async (t) => {
  // Both once blocked the event loop for seconds (a regular expression on them): 5.3 s for this
  // number, 1.5 s for a 15 KB Content-Type. Now each is one pass.
  const zeros = await post('/api/any-json', `1.${'0'.repeat(65_000)}1`)
  t.strictSame([zeros.status, (jsonOf(zeros) as { code: string }).code], [400, 'VALIDATION_FAILED'], 'a number that reads as 1 but is not')
  const exact = await post('/api/any-json', `1${'0'.repeat(10)}.${'0'.repeat(65_000)}`)
  t.strictSame([exact.status, jsonOf(exact)], [200, { success: true, got: 1e10 }], 'an integer written with many zeros after the point')
  const semicolons = await post('/api/any-json', '{"a":1}', { 'content-type': `application/json${';'.repeat(15_000)}` })
  t.strictSame([semicolons.status, jsonOf(semicolons)], [200, { success: true, got: { a: 1 } }], 'only empty parameters')
  const junk = await post('/api/any-json', '{"a":1}', { 'content-type': `application/json${'; '.repeat(5_000)}x` })
  t.equal(junk.status, 415, 'a parameter without a value')
})

t.test('a content-encoded JSON body is 415 and is not read as JSON', async (t) => {
  const { gzipSync } = await import('node:zlib')
  const gz = await post('/api/things', gzipSync('{"name":"kit"}'), { 'content-encoding': 'gzip' })
  t.strictSame([gz.status, jsonOf(gz)], [415, { error: 'a JSON body must not be content-encoded (no Content-Encoding)', code: 'UNSUPPORTED_MEDIA_TYPE' }])
  const identity = await post('/api/things', '{"name":"kit"}', { 'content-encoding': 'identity' })
  t.equal(identity.status, 200, 'identity is no coding')
  const chunked = (coding: string, json: string): string =>
    `POST /api/things HTTP/1.1\r\nHost: a\r\nConnection: close\r\nContent-Type: application/json\r\nTransfer-Encoding: ${coding}\r\n\r\n${json.length.toString(16)}\r\n${json}\r\n0\r\n\r\n`
  // Plain JSON under the gzip label: the coding announced is refused, whatever the bytes.
  const transferGz = await rawExchange(chunked('gzip, chunked', '{"name":"kit"}'))
  t.match(transferGz, /^HTTP\/1\.1 415 [^]*\{"error":"a JSON body must not be transfer-coded other than chunked","code":"UNSUPPORTED_MEDIA_TYPE"\}$/, 'a transfer coding before the chunking too')
  t.match(await rawExchange(chunked('Chunked', '{"name":"kit"}')), /^HTTP\/1\.1 200 /, 'chunked alone is read, in any case')
  // An empty body is no body, whatever its headers claim (README): no media to refuse, and no JSON.
  const empty = await rawExchange('POST /api/things HTTP/1.1\r\nHost: a\r\nConnection: close\r\nContent-Type: application/json\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n')
  t.match(empty, /^HTTP\/1\.1 400 [^]*\{"error":"the request needs a JSON body","code":"INVALID_JSON"\}$/, 'an empty body under a coding is 400 INVALID_JSON, as with none')
})

t.test('a client that sends its headers too slowly gets 408 REQUEST_TIMEOUT after 10 s, not at the next 30 s check', async (t) => {
  const started = Date.now()
  const answer = await rawExchange('GET /api/thing HTTP/1.1\r\nHost: a\r\n')
  const seconds = (Date.now() - started) / 1000
  t.match(answer, /^HTTP\/1\.1 408 /)
  t.match(answer, /\{"error":"the request was not complete in time","code":"REQUEST_TIMEOUT"\}$/)
  t.ok(seconds >= 9.5 && seconds < 20, `answered after ${seconds.toFixed(1)} s`)
})

t.test('errors never carry a stack: 500 INTERNAL with a fixed message, the real one only in the log', async (t) => {
  for (const path of ['/api/boom', '/api/async-boom']) {
    const res = await rawRequest(base, 'GET', path)
    t.equal(res.status, 500)
    t.strictSame(jsonOf(res), { error: 'internal error', code: 'INTERNAL' })
    const logged = logs.find((e) => e.event === 'http.error' && e.id === res.headers['x-request-id'])
    t.match(logged, { event: 'http.error', method: 'GET', path }, `${path}: logged with its request id`)
    t.match(String(logged?.error), /\n\s+at /, 'the log has the stack')
  }
  const page = await rawRequest(base, 'GET', '/page/boom')
  t.equal(page.status, 500)
  t.equal(page.headers['content-type'], 'text/html; charset=utf-8')
  t.notMatch(page.body.toString(), /secret|at .*\.js/)
  const teapot = await rawRequest(base, 'GET', '/api/teapot')
  t.equal(teapot.status, 418)
  t.strictSame(jsonOf(teapot), { error: 'short and stout', code: 'TEAPOT' })
  t.notOk(logs.some((e) => e.event === 'http.error' && e.id === teapot.headers['x-request-id']), 'an HttpError below 500 is not an error log')
})

t.test('429 RATE_LIMITED: Retry-After is the wait in whole seconds, rounded up and at least 1, so a client that waits it is not refused again', async (t) => {
  for (const [ms, seconds] of [[1, '1'], [999, '1'], [1000, '1'], [1001, '2'], [1499, '2'], [59_001, '60'], [0, '1']] as const) {
    const res = await rawRequest(base, 'GET', `/api/limited?ms=${ms}`)
    t.strictSame([res.status, jsonOf(res), res.headers['retry-after']], [429, { error: 'slow down', code: 'RATE_LIMITED' }, seconds], `${ms} ms to wait`)
  }
})

t.test('CORS: an allowed origin gets its headers, a foreign one none; Vary: Origin and nosniff on every API answer', async (t) => {
  const allowed = await rawRequest(base, 'GET', '/api/thing', { origin: ORIGIN })
  t.equal(allowed.headers['access-control-allow-origin'], ORIGIN)
  t.equal(allowed.headers['access-control-allow-credentials'], 'true')
  // README: Allow, ETag, Retry-After and X-Request-Id are exposed, so a page can read a 405's methods, revalidate, back off and quote an id.
  t.same(allowed.headers['access-control-expose-headers']?.split(/,\s*/).sort(), ['Allow', 'ETag', 'Retry-After', 'X-Request-Id'], 'the headers a page may read')
  t.equal(allowed.headers['vary'], 'Origin')
  const foreign = await rawRequest(base, 'GET', '/api/thing', { origin: 'https://evil.example' })
  t.equal(foreign.status, 200, 'a foreign GET is answered')
  t.equal(foreign.headers['access-control-allow-origin'], undefined)
  t.equal(foreign.headers['access-control-allow-credentials'], undefined)
  t.equal(foreign.headers['vary'], 'Origin')
  const notFound = await rawRequest(base, 'GET', '/api/nothing', { origin: ORIGIN })
  t.equal(notFound.headers['vary'], 'Origin', 'errors too')
  for (const res of [allowed, foreign, notFound]) t.equal(res.headers['x-content-type-options'], 'nosniff', 'a JSON answer is never sniffed as a page')
  t.equal(notFound.headers['access-control-allow-origin'], ORIGIN)
})

t.test('preflight: 204, CORS headers only for an allowed origin', async (t) => {
  const allowed = await rawRequest(base, 'OPTIONS', '/api/things', {
    origin: ORIGIN,
    'access-control-request-method': 'POST',
    'access-control-request-headers': 'content-type',
  })
  t.equal(allowed.status, 204)
  t.equal(allowed.body.length, 0)
  t.equal(allowed.headers['access-control-allow-origin'], ORIGIN)
  t.match(allowed.headers['access-control-allow-methods'], /POST/)
  t.equal(allowed.headers['access-control-allow-headers'], 'content-type')
  t.equal(allowed.headers['vary'], 'Origin')
  const denied = await rawRequest(base, 'OPTIONS', '/api/things', { origin: 'https://evil.example', 'access-control-request-method': 'POST' })
  t.equal(denied.status, 204)
  t.equal(denied.headers['access-control-allow-origin'], undefined)
  t.equal(denied.headers['access-control-allow-methods'], undefined)
})

t.test('a state-changing request from a foreign origin is 403 FORBIDDEN_ORIGIN; without Origin it passes', async (t) => {
  for (const method of ['POST', 'PUT']) {
    const res = await rawRequest(base, method, '/api/things', { origin: 'https://evil.example', 'content-type': 'application/json' }, '{"name":"kit"}')
    t.equal(res.status, 403, method)
    t.strictSame(jsonOf(res), { error: 'origin not allowed', code: 'FORBIDDEN_ORIGIN' })
  }
  t.equal((await post('/api/things', '{"name":"kit"}', { origin: ORIGIN })).status, 200, 'an allowed origin')
  t.equal((await post('/api/things', '{"name":"kit"}')).status, 200, 'no Origin (not a browser)')
})

t.test('X-Request-Id on every response, and one access-log line per request carrying it', async (t) => {
  const responses = [
    await rawRequest(base, 'GET', '/api/thing'),
    await rawRequest(base, 'GET', '/api/nothing'),
    await rawRequest(base, 'DELETE', '/api/thing'),
    await rawRequest(base, 'GET', '/api/boom'),
    await rawRequest(base, 'OPTIONS', '/api/thing', { origin: ORIGIN }),
    await post('/api/things', 'x'.repeat(70_000)),
    await rawRequest(base, 'GET', '/page'),
    await rawRequest(base, 'HEAD', '/api/thing'),
  ]
  const ids = responses.map((r) => r.headers['x-request-id'])
  for (const id of ids) t.match(id, UUID)
  t.equal(new Set(ids).size, ids.length, 'unique')
  await sleep(50)
  for (const [i, res] of responses.entries()) {
    const lines = logs.filter((e) => e.event === 'http.request' && e.id === ids[i])
    t.equal(lines.length, 1, `one line for ${ids[i]}`)
    t.match(lines[0], { event: 'http.request', id: ids[i], method: String, path: String, status: res.status, ms: Number, ip: '127.0.0.1' })
  }
  t.match(logs.find((e) => e.id === ids[0]), { method: 'GET', path: '/api/thing', status: 200 })
})

t.test('closeGracefully finishes a request in flight, then closes', async (t) => {
  const other = createServer({ router, origins: [], trustProxy: new BlockList(), log: () => {} })
  await new Promise<void>((r) => other.listen(0, '127.0.0.1', () => r()))
  const url = `http://127.0.0.1:${(other.address() as AddressInfo).port}`
  const slow = rawRequest(url, 'GET', '/api/slow')
  await sleep(100)
  const closed = closeGracefully(other, 5000)
  const res = await slow
  t.equal(res.status, 200)
  t.strictSame(jsonOf(res), { success: true, slow: true })
  await closed
  await t.rejects(rawRequest(url, 'GET', '/api/thing'), 'no longer accepting')
})
