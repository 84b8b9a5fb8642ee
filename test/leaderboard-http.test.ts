import path from 'node:path'
import { readRow } from './helpers/accounts.js'
import t from 'tap'
import { Client, ROOT, startPlatform, tempDir } from './helpers/platform.js'

const MANIFESTS_DIR = path.join(ROOT, 'test/fixtures/leaderboards')
const dataDir = tempDir()
const platform = await startPlatform({ dataDir, env: { MANIFESTS_DIR } })
t.teardown(() => platform.stop())

async function guest(): Promise<{ client: Client; id: string; username: string }> {
  const client = new Client(platform.url)
  const res = await client.post('/api/auth/guest')
  const body = (await res.json()) as { user: { id: string; username: string } }
  return { client, ...body.user }
}

function storedRow(board: string, owner: string): unknown {
  return readRow(dataDir, 'SELECT score, subscore, metadata, num_score, username FROM leaderboard_records WHERE leaderboard_id = ? AND owner_id = ?', board, owner)
}

async function submit(client: Client, body: unknown) {
  const res = await client.post('/api/leaderboards/submit', body)
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> }
}

t.test('every operator x sort order x subscore over HTTP answers the stored record', async (t) => {
  // [board, writes as [score, subscore | undefined], stored pair after each write]
  type Row = [string, [number, number | undefined][], [number, number][]]
  const table: Row[] = [
    ['fx-best-desc', [[100, 5], [90, 9], [110, undefined], [100, 0]], [[100, 5], [100, 9], [110, 9], [110, 9]]],
    ['fx-best-asc', [[100, 5], [90, 9], [110, 1], [100, undefined]], [[100, 5], [90, 5], [90, 1], [90, 0]]],
    ['fx-set-desc', [[100, 5], [90, undefined], [90, 0], [7, 7]], [[100, 5], [90, 0], [90, 0], [7, 7]]],
    ['fx-set-asc', [[100, undefined], [120, 3], [120, 3], [5, 0]], [[100, 0], [120, 3], [120, 3], [5, 0]]],
    ['fx-incr-desc', [[100, 5], [10, 1], [0, undefined], [0, 4]], [[100, 5], [110, 6], [110, 6], [110, 10]]],
    ['fx-incr-asc', [[3, undefined], [4, 2], [0, 0], [1, undefined]], [[3, 0], [7, 2], [7, 2], [8, 2]]],
  ]
  for (const [board, writes, stored] of table) {
    const user = await guest()
    for (let i = 0; i < writes.length; i++) {
      const [score, subscore] = writes[i]!
      const res = await submit(user.client, subscore === undefined ? { leaderboardId: board, score } : { leaderboardId: board, score, subscore })
      const [wantScore, wantSub] = stored[i]!
      t.same(res, {
        status: 200,
        headers: res.headers,
        body: { success: true, record: { leaderboard_id: board, owner_id: user.id, username: user.username, score: wantScore, subscore: wantSub, rank: 1 } },
      }, `${board} write ${i}`)
    }
  }
})

t.test('ranks with ties and pages that cover every record once', async (t) => {
  const users = await Promise.all(Array.from({ length: 23 }, () => guest()))
  await Promise.all(users.map((u, i) => submit(u.client, { leaderboardId: 'fx-set-asc', score: 1000 + (i % 4), subscore: i % 2 })))
  const want = users
    .map((u, i) => ({ owner_id: u.id, username: u.username, score: 1000 + (i % 4), subscore: i % 2 }))
    // other tests write to this board too, but never at 1000 or above
    .sort((a, b) => a.score - b.score || a.subscore - b.subscore || (a.owner_id < b.owner_id ? -1 : 1))
  const seen: unknown[] = []
  let cursor: string | null = null
  let pages = 0
  do {
    const res: Response = await users[0]!.client.get(`/api/leaderboards/fx-set-asc?limit=5${cursor ? `&cursor=${cursor}` : ''}`)
    t.equal(res.status, 200)
    t.equal(res.headers.get('cache-control'), 'no-store')
    const body = (await res.json()) as { success: boolean; records: { rank: number }[]; nextCursor: string | null; ownRecord: { rank: number } | null }
    t.equal(body.success, true)
    t.ok(body.records.length <= 5)
    seen.push(...body.records)
    t.match(body.ownRecord, { owner_id: users[0]!.id, score: 1000, subscore: 0 })
    cursor = body.nextCursor
    pages++
  } while (cursor !== null)
  const ours = seen.filter((r) => (r as { score: number }).score >= 1000)
  const ranked = ours.map((r, i) => ({ ...(r as object), rank: (seen.length - ours.length) + i + 1 }))
  t.same(ours, ranked, 'ranks are consecutive')
  t.same(ours.map((r) => { const { rank, ...rest } = r as { rank: number }; void rank; return rest }), want, 'rank order: score, subscore, owner id')
  t.equal(pages, Math.ceil(seen.length / 5))
  const first = (await (await users[0]!.client.get('/api/leaderboards/fx-set-asc')).json()) as { records: unknown[]; nextCursor: string | null }
  t.same(first.records, seen.slice(0, 20), 'without a limit: the first 20 (CONTRACT §3 default)')
  t.type(first.nextCursor, 'string', 'and a cursor to the rest')
  const own = ours.find((r) => (r as { owner_id: string }).owner_id === users[0]!.id) as { rank: number }
  const again = await submit(users[0]!.client, { leaderboardId: 'fx-set-asc', score: 1000, subscore: 0 })
  t.equal((again.body.record as { rank: number }).rank, own.rank, 'a no-op write answers the same rank')
})

t.test('GET /api/leaderboards/{id}: the limit\'s bounds, 1 and 100, are accepted and honoured', async (t) => {
  // The test before wrote 23 records of its own to fx-set-asc: more than the default 20, fewer than 100.
  const anon = new Client(platform.url)
  type Page = { success: boolean; records: { rank: number }[]; nextCursor: string | null }
  const page = async (query: string): Promise<Page> => {
    const res = await anon.get(`/api/leaderboards/fx-set-asc?${query}`)
    t.equal(res.status, 200, query)
    return (await res.json()) as Page
  }
  const all = await page('limit=100')
  t.equal(all.success, true)
  t.ok(all.records.length > 20 && all.records.length < 100, `limit=100: every record (${all.records.length}), past the default 20`)
  t.equal(all.nextCursor, null, 'limit=100: one page, no cursor')
  t.same(all.records.map((r) => r.rank), all.records.map((_, i) => i + 1), 'ranks 1..n')
  t.same(await page('limit=99'), all, 'limit=99: the same page')
  t.same(await page('limit=0100'), all, 'limit=0100 is 100 (an audit: leading zeros were refused)')
  const one = await page('limit=1')
  t.same(one.records, all.records.slice(0, 1), 'limit=1: the first record alone')
  t.same(await page('limit=01'), one, 'limit=01 is 1')
  t.same(await page('limit=0001'), one, 'limit=0001 is 1: any number of leading zeros')
  t.same(await page('limit=000100'), all, 'limit=000100 is 100')
  t.type(one.nextCursor, 'string', 'limit=1: and a cursor to the rest')
})

t.test('GET /api/leaderboards/{id}: nextCursor is null on a last page that is full (a record count that is a multiple of the limit)', async (t) => {
  // fx-best-asc holds the records of the tests before; bring its count to an even 2n.
  const anon = new Client(platform.url)
  type Page = { records: { owner_id: string }[]; nextCursor: string | null }
  const page = async (query: string): Promise<Page> => (await (await anon.get(`/api/leaderboards/fx-best-asc?${query}`)).json()) as Page
  const before = (await page('limit=100')).records.length
  for (let i = 0; i < 2 + (before % 2); i++) t.equal((await submit((await guest()).client, { leaderboardId: 'fx-best-asc', score: 2000 + i })).status, 200)
  const all = await page('limit=100')
  const n = all.records.length / 2
  t.ok(Number.isInteger(n) && n >= 1, `an even count (${all.records.length})`)
  t.equal((await page(`limit=${2 * n}`)).nextCursor, null, `${2 * n} records, limit ${2 * n}: no cursor`)
  const first = await page(`limit=${n}`)
  t.type(first.nextCursor, 'string', `limit ${n}: a cursor to the second page`)
  const second = await page(`limit=${n}&cursor=${first.nextCursor}`)
  t.same(second.records, all.records.slice(n), 'the second page holds the rest')
  t.equal(second.nextCursor, null, `limit ${n}, the second page: no cursor`)
})

t.test('GET /api/leaderboards/{id}: defaults, ownRecord, and its errors', async (t) => {
  const anon = new Client(platform.url)
  const res = await anon.get('/api/leaderboards/fx-incr-desc')
  t.equal(res.status, 200)
  const body = (await res.json()) as { records: unknown[]; nextCursor: unknown; ownRecord: unknown }
  t.equal(body.ownRecord, null, 'no ownRecord without a session')
  const fresh = await guest()
  const signedIn = (await (await fresh.client.get('/api/leaderboards/fx-incr-desc')).json()) as { ownRecord: unknown }
  t.equal(signedIn.ownRecord, null, 'no ownRecord when not ranked')
  const cases: [string, number, string][] = [
    ['/api/leaderboards/fx-incr-desc?limit=0', 400, 'VALIDATION_FAILED'],
    ['/api/leaderboards/fx-incr-desc?limit=000', 400, 'VALIDATION_FAILED'],
    ['/api/leaderboards/fx-incr-desc?limit=0101', 400, 'VALIDATION_FAILED'],
    ['/api/leaderboards/fx-incr-desc?limit=%2B5', 400, 'VALIDATION_FAILED'],
    ['/api/leaderboards/fx-incr-desc?limit=%205', 400, 'VALIDATION_FAILED'],
    ['/api/leaderboards/fx-incr-desc?limit=5%20', 400, 'VALIDATION_FAILED'],
    ['/api/leaderboards/fx-incr-desc?limit=05%0A', 400, 'VALIDATION_FAILED'],
    ['/api/leaderboards/fx-incr-desc?limit=1e1', 400, 'VALIDATION_FAILED'],
    ['/api/leaderboards/fx-incr-desc?limit=101', 400, 'VALIDATION_FAILED'],
    ['/api/leaderboards/fx-incr-desc?limit=abc', 400, 'VALIDATION_FAILED'],
    ['/api/leaderboards/fx-incr-desc?limit=1.5', 400, 'VALIDATION_FAILED'],
    ['/api/leaderboards/fx-incr-desc?limit=-1', 400, 'VALIDATION_FAILED'],
    ['/api/leaderboards/fx-incr-desc?cursor=!!', 400, 'VALIDATION_FAILED'],
    // A repeated parameter is refused whichever copy is valid: the first no longer passes alone.
    ['/api/leaderboards/fx-incr-desc?limit=2&limit=500', 400, 'VALIDATION_FAILED'],
    ['/api/leaderboards/fx-incr-desc?limit=2&limit=2', 400, 'VALIDATION_FAILED'],
    ['/api/leaderboards/fx-incr-desc?limit=2&cursor=abc&cursor=def', 400, 'VALIDATION_FAILED'],
    ['/api/leaderboards/fx-incr-desc?cursor=eyJsIjoiZngtaW5jci1kZXNjIn0', 400, 'VALIDATION_FAILED'],
    ['/api/leaderboards/nope', 404, 'LEADERBOARD_NOT_FOUND'],
    ['/api/leaderboards/fixture-disabled', 404, 'LEADERBOARD_NOT_FOUND'],
    [`/api/leaderboards/${'x'.repeat(129)}`, 404, 'LEADERBOARD_NOT_FOUND'],
    ['/api/leaderboards/fx%01best', 404, 'LEADERBOARD_NOT_FOUND'],
    ['/api/leaderboards/%00', 404, 'LEADERBOARD_NOT_FOUND'],
    ['/api/leaderboards/__proto__', 404, 'LEADERBOARD_NOT_FOUND'],
  ]
  for (const [url, status, code] of cases) {
    const r = await anon.get(url)
    const b = (await r.json()) as { code: string; error: string }
    t.equal(r.status, status, url)
    t.equal(b.code, code, url)
    t.type(b.error, 'string')
  }
  t.strictSame(
    await (await anon.get('/api/leaderboards/fx-incr-desc?limit=500')).json(),
    { error: 'request does not match the schema', code: 'VALIDATION_FAILED', details: [{ path: '/limit', message: 'must be an integer from 1 to 100' }] },
    'the limit\'s rule in words',
  )
  // An empty or malformed cursor breaks one rule, worded once (the pattern asks for a character).
  for (const cursor of ['', '!!', 'a=b']) {
    t.strictSame(
      await (await anon.get(`/api/leaderboards/fx-incr-desc?cursor=${cursor}`)).json(),
      { error: 'request does not match the schema', code: 'VALIDATION_FAILED', details: [{ path: '/cursor', message: 'must be a nextCursor as given' }] },
      `cursor=${cursor}: the cursor's rule in words, once`,
    )
  }
  const repeated = (await (await anon.get('/api/leaderboards/fx-incr-desc?limit=2&limit=500')).json()) as Record<string, unknown>
  t.strictSame(
    repeated,
    { error: 'the query parameter limit is given more than once', code: 'VALIDATION_FAILED', details: [{ path: '/limit', message: 'must be given at most once' }] },
    'the repeated parameter is named',
  )
  const cursorFromOtherBoard = await (async () => {
    const users = await Promise.all([guest(), guest()])
    for (const u of users) await submit(u.client, { leaderboardId: 'fx-daily', score: 5 })
    const page = (await (await anon.get('/api/leaderboards/fx-daily?limit=1')).json()) as { nextCursor: string }
    return page.nextCursor
  })()
  t.type(cursorFromOtherBoard, 'string')
  t.equal((await anon.get(`/api/leaderboards/fx-incr-desc?cursor=${cursorFromOtherBoard}`)).status, 400, 'a cursor of another board')

  // Strings that base64 decodes to the same cursor: a stray last character (decoding drops it),
  // or the last character with other unused low bits. Each is refused; the cursor as issued, and
  // with its padding, reads the second page.
  const second = await anon.get(`/api/leaderboards/fx-daily?limit=1&cursor=${cursorFromOtherBoard}`)
  const secondPage = (await second.json()) as { records: unknown[] }
  t.equal(second.status, 200, 'the cursor as issued is read')
  t.equal(secondPage.records.length, 1, 'the second page')
  const padded = cursorFromOtherBoard.padEnd(Math.ceil(cursorFromOtherBoard.length / 4) * 4, '=')
  t.strictSame(await (await anon.get(`/api/leaderboards/fx-daily?limit=1&cursor=${padded}`)).json(), secondPage, 'and with its padding')
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
  const last = alphabet.indexOf(cursorFromOtherBoard.at(-1)!)
  const aliases = [`${cursorFromOtherBoard}A`, `${cursorFromOtherBoard.slice(0, -1)}${alphabet[last ^ 1]}`]
    .filter((alias) => Buffer.from(alias, 'base64url').equals(Buffer.from(cursorFromOtherBoard, 'base64url')))
  t.ok(aliases.length > 0, 'a string that decodes to the same cursor exists')
  for (const alias of aliases) {
    const res = await anon.get(`/api/leaderboards/fx-daily?limit=1&cursor=${alias}`)
    t.equal(res.status, 400, `${alias}: 400`)
    t.strictSame(await res.json(), { error: 'cursor is not valid', code: 'VALIDATION_FAILED', details: [{ path: '/cursor', message: 'cursor is not valid' }] }, `${alias}: not a cursor of ours`)
  }
})

t.test('GET /api/leaderboards/submit is 405 with Allow: POST, not a read of a board called "submit"', async (t) => {
  for (const method of ['GET', 'PUT', 'DELETE']) {
    const res = await new Client(platform.url).request(method, '/api/leaderboards/submit')
    t.equal(res.status, 405, method)
    t.equal(res.headers.get('allow'), 'POST', `${method}: Allow`)
    t.same(await res.json(), { error: `${method} not allowed`, code: 'METHOD_NOT_ALLOWED' }, method)
  }
})

t.test('bad submissions answer the contract error and change nothing', async (t) => {
  const user = await guest()
  const board = 'fx-best-desc'
  const ok = await submit(user.client, { leaderboardId: board, score: 50, subscore: 5, metadata: { lap: 1 } })
  t.equal(ok.status, 200)
  const before = storedRow(board, user.id)
  const deep = (n: number): unknown => (n === 0 ? 1 : { a: deep(n - 1) })
  const cases: [string, unknown, number, string][] = [
    ['fractional score', { leaderboardId: board, score: 60.5 }, 400, 'VALIDATION_FAILED'],
    ['negative score', { leaderboardId: board, score: -60 }, 400, 'VALIDATION_FAILED'],
    ['string score', { leaderboardId: board, score: '60' }, 400, 'VALIDATION_FAILED'],
    ['NaN-like score', { leaderboardId: board, score: 'NaN' }, 400, 'VALIDATION_FAILED'],
    ['null score', { leaderboardId: board, score: null }, 400, 'VALIDATION_FAILED'],
    ['missing score', { leaderboardId: board }, 400, 'VALIDATION_FAILED'],
    ['score 2^53', { leaderboardId: board, score: 2 ** 53 }, 400, 'VALIDATION_FAILED'],
    ['score 1e300', `{"leaderboardId":"${board}","score":1e300}`, 400, 'VALIDATION_FAILED'],
    ['score NaN literal', `{"leaderboardId":"${board}","score":NaN}`, 400, 'INVALID_JSON'],
    // JSON.parse would round these to integers the client never sent (to 9007199254740990, 0, 60).
    ['score a fraction that reads as an integer', `{"leaderboardId":"${board}","score":9007199254740990.5}`, 400, 'VALIDATION_FAILED'],
    ['score 1e-400', `{"leaderboardId":"${board}","score":1e-400}`, 400, 'VALIDATION_FAILED'],
    ['subscore 60.00000000000001', `{"leaderboardId":"${board}","score":60,"subscore":60.000000000000001}`, 400, 'VALIDATION_FAILED'],
    ['metadata 1e400 (would be stored as null)', `{"leaderboardId":"${board}","score":60,"metadata":{"x":1e400}}`, 400, 'VALIDATION_FAILED'],
    ['metadata integer beyond 2^53 (would lose digits)', `{"leaderboardId":"${board}","score":60,"metadata":{"id":12345678901234567890}}`, 400, 'VALIDATION_FAILED'],
    ['fractional subscore', { leaderboardId: board, score: 60, subscore: 0.5 }, 400, 'VALIDATION_FAILED'],
    ['negative subscore', { leaderboardId: board, score: 60, subscore: -1 }, 400, 'VALIDATION_FAILED'],
    ['subscore beyond 2^53-1', `{"leaderboardId":"${board}","score":60,"subscore":9007199254740993}`, 400, 'VALIDATION_FAILED'],
    ['metadata array', { leaderboardId: board, score: 60, metadata: [1] }, 400, 'VALIDATION_FAILED'],
    ['metadata string', { leaderboardId: board, score: 60, metadata: '{}' }, 400, 'VALIDATION_FAILED'],
    ['metadata null', { leaderboardId: board, score: 60, metadata: null }, 400, 'VALIDATION_FAILED'],
    ['metadata over 2 KiB', { leaderboardId: board, score: 60, metadata: { s: 'x'.repeat(2041) } }, 400, 'VALIDATION_FAILED'],
    ['metadata over 2 KiB in UTF-8', { leaderboardId: board, score: 60, metadata: { s: 'é'.repeat(1021) } }, 400, 'VALIDATION_FAILED'],
    ['metadata nested 33 deep', { leaderboardId: board, score: 60, metadata: deep(33) }, 400, 'VALIDATION_FAILED'],
    ['metadata nested 5000 deep', `{"leaderboardId":"${board}","score":60,"metadata":${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}}`, 400, 'VALIDATION_FAILED'],
    ['extra property', { leaderboardId: board, score: 60, extra: 1 }, 400, 'VALIDATION_FAILED'],
    ['array body', [board, 60], 400, 'VALIDATION_FAILED'],
    ['malformed JSON', '{"leaderboardId":', 400, 'INVALID_JSON'],
    ['unknown leaderboard', { leaderboardId: 'nope', score: 60 }, 404, 'LEADERBOARD_NOT_FOUND'],
    ['leaderboard of a disabled game', { leaderboardId: 'fixture-disabled', score: 60 }, 404, 'LEADERBOARD_NOT_FOUND'],
    ['id over 128 characters', { leaderboardId: 'x'.repeat(129), score: 60 }, 404, 'LEADERBOARD_NOT_FOUND'],
    ['id with a control character', { leaderboardId: 'fx-best-desc\u0000', score: 60 }, 404, 'LEADERBOARD_NOT_FOUND'],
    ['empty id', { leaderboardId: '', score: 60 }, 404, 'LEADERBOARD_NOT_FOUND'],
    ['__proto__ id', { leaderboardId: '__proto__', score: 60 }, 404, 'LEADERBOARD_NOT_FOUND'],
    ['id a number', { leaderboardId: 7, score: 60 }, 400, 'VALIDATION_FAILED'],
  ]
  for (const [name, body, status, code] of cases) {
    const res = await submit(user.client, body)
    t.equal(res.status, status, name)
    t.equal(res.body.code, code, name)
  }
  const text = await user.client.post('/api/leaderboards/submit', 'score=60', { 'content-type': 'text/plain' })
  t.equal(text.status, 415)
  t.same(await text.json(), { error: 'body must be application/json', code: 'UNSUPPORTED_MEDIA_TYPE' })
  t.same(storedRow(board, user.id), before, 'nothing changed')
  // Exactly 2 KiB and 32 levels are accepted.
  const edge = await submit(user.client, { leaderboardId: board, score: 60, metadata: { s: 'x'.repeat(2040) } })
  t.equal(edge.status, 200)
  const nested = await submit(user.client, { leaderboardId: board, score: 61, metadata: deep(31) })
  t.equal(nested.status, 200)
})

t.test('a score and a subscore of 2^53-1, the contract\'s largest, are accepted and stored exactly', async (t) => {
  const user = await guest()
  const max = Number.MAX_SAFE_INTEGER
  const res = await submit(user.client, { leaderboardId: 'fx-set-desc', score: max, subscore: max })
  t.equal(res.status, 200, 'accepted')
  const listed = (await (await user.client.get('/api/leaderboards/fx-set-desc?limit=1')).json()) as Record<string, unknown>
  const record = { owner_id: user.id, username: user.username, score: max, subscore: max, rank: 1 }
  t.same(listed.records, [record], 'listed first, with both numbers exact')
  t.same(listed.ownRecord, record, 'and as the player\'s own record')
})

t.test('__proto__ and constructor keys are stored as data', async (t) => {
  const user = await guest()
  const raw = '{"leaderboardId":"fx-set-desc","score":3,"metadata":{"__proto__":{"polluted":true},"constructor":{"prototype":{"x":1}}}}'
  const res = await submit(user.client, raw)
  t.equal(res.status, 200)
  t.same(storedRow('fx-set-desc', user.id), {
    score: 3, subscore: 0, num_score: 1, username: user.username,
    metadata: '{"__proto__":{"polluted":true},"constructor":{"prototype":{"x":1}}}',
  })
  t.equal(({} as Record<string, unknown>).polluted, undefined)
})

t.test('submit needs a session; floods get 429 with Retry-After', async (t) => {
  const anon = new Client(platform.url)
  t.same(await submit(anon, { leaderboardId: 'fx-best-desc', score: 1 }).then((r) => [r.status, r.body]), [401, { error: 'no session', code: 'NO_SESSION' }])
  const user = await guest()
  const results = await Promise.all(Array.from({ length: 200 }, (_, i) => submit(user.client, { leaderboardId: 'fx-incr-desc', score: 1 }).then((r) => ({ ...r, i }))))
  const limited = results.filter((r) => r.status === 429)
  const accepted = results.filter((r) => r.status === 200)
  t.ok(limited.length >= 1, `some were limited (${limited.length})`)
  t.ok(accepted.length >= 40, `the burst was accepted (${accepted.length})`)
  t.same(limited[0]!.body, { error: 'too many submissions', code: 'RATE_LIMITED' })
  t.match(limited[0]!.headers.get('retry-after'), /^[1-9][0-9]*$/)
  t.match(storedRow('fx-incr-desc', user.id), { score: accepted.length, num_score: accepted.length }, 'only accepted submissions count')
})
