import http from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { AnyAnswer } from '../lib/backend/nakama/answers.js'
import { NakamaClient } from '../lib/backend/nakama/client.js'

// The wire form of an RPC call, read by a bare HTTP server rather than the fake: nakama-api.md
// §1.9 writes it `POST /v2/rpc/{id}?unwrap` with the JSON body raw, and a server that reads the
// query by hand must find `unwrap` as written there.
t.test('an RPC goes out as POST /v2/rpc/<id>?unwrap with the HTTP key in Basic auth and the payload raw', async (t) => {
  const seen: { method?: string; url?: string; headers: http.IncomingHttpHeaders; body: string }[] = []
  const server = http.createServer((req, res) => {
    let body = ''
    req.setEncoding('utf8').on('data', (d: string) => (body += d))
    req.on('end', () => {
      seen.push({ method: req.method, url: req.url, headers: req.headers, body })
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"answer":42}')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => server.close())
  const { port } = server.address() as AddressInfo
  const client = new NakamaClient({ url: `http://127.0.0.1:${port}`, serverKey: 'server-key', httpKey: 'http-key' })
  const answer = await client.rpc('playfield_get_account', { userId: 'u-1', note: '__proto__' }, AnyAnswer)
  t.strictSame(answer, { answer: 42 }, 'the unwrapped answer, parsed')
  t.equal(seen.length, 1)
  t.equal(seen[0]!.method, 'POST')
  t.equal(seen[0]!.url, '/v2/rpc/playfield_get_account?unwrap')
  t.equal(seen[0]!.headers.authorization, `Basic ${Buffer.from('http-key:').toString('base64')}`, 'the HTTP key as user name, empty password')
  t.equal(seen[0]!.headers['content-type'], 'application/json')
  t.equal(seen[0]!.body, '{"userId":"u-1","note":"__proto__"}', 'the payload as it is, not a JSON string of it')
})
