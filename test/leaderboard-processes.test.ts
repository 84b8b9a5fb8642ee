import path from 'node:path'
import { readRow } from './helpers/accounts.js'
import t from 'tap'
import { Client, ROOT, startPlatform, tempDir } from './helpers/platform.js'

// Two platform processes on one DATA_DIR (CONTRACT §2: any platform instance can serve any
// request): each must answer what the shared file holds, never what its own memory last saw.
const MANIFESTS_DIR = path.join(ROOT, 'test/fixtures/leaderboards')
const dataDir = tempDir()
const first = await startPlatform({ dataDir, env: { MANIFESTS_DIR } })
t.teardown(() => first.stop())
const second = await startPlatform({ dataDir, env: { MANIFESTS_DIR } })
t.teardown(() => second.stop())

/** A guest signed in on the first process, and a client for the second with the same cookie. */
async function player(): Promise<{ one: Client; two: Client; id: string; username: string }> {
  const one = new Client(first.url)
  const { user } = (await (await one.post('/api/auth/guest')).json()) as { user: { id: string; username: string } }
  const two = new Client(second.url)
  two.cookies = one.cookies
  return { one, two, ...user }
}

async function submit(client: Client, body: unknown): Promise<{ status: number; body: unknown }> {
  const res = await client.post('/api/leaderboards/submit', body)
  return { status: res.status, body: await res.json() }
}

async function list(client: Client, board: string): Promise<{ status: number; body: unknown }> {
  const res = await client.get(`/api/leaderboards/${board}`)
  return { status: res.status, body: await res.json() }
}

function storedScore(board: string, owner: string): unknown {
  return readRow(dataDir, 'SELECT score, subscore FROM leaderboard_records WHERE leaderboard_id = ? AND owner_id = ?', board, owner)
}

t.test('best scores written through two processes on one DATA_DIR: each answers the stored best, none is lost', async (t) => {
  const p = await player()
  const record = (score: number) => ({ leaderboard_id: 'fx-best-desc', owner_id: p.id, username: p.username, score, subscore: 0, rank: 1 })
  const listed = (score: number) => {
    const own = { owner_id: p.id, username: p.username, score, subscore: 0, rank: 1 }
    return { status: 200, body: { success: true, records: [own], nextCursor: null, ownRecord: own } }
  }
  t.same(await submit(p.one, { leaderboardId: 'fx-best-desc', score: 100 }), { status: 200, body: { success: true, record: record(100) } }, 'first process: 100')
  t.same(await submit(p.two, { leaderboardId: 'fx-best-desc', score: 50 }), { status: 200, body: { success: true, record: record(100) } }, 'second process: 50 is no better than the stored 100')
  t.same(await list(p.two, 'fx-best-desc'), listed(100), 'the second process lists 100')
  t.same(await submit(p.one, { leaderboardId: 'fx-best-desc', score: 120 }), { status: 200, body: { success: true, record: record(120) } }, 'first process: 120')
  t.same(await submit(p.two, { leaderboardId: 'fx-best-desc', score: 110 }), { status: 200, body: { success: true, record: record(120) } }, 'second process: 110 does not overwrite the confirmed 120')
  t.same(storedScore('fx-best-desc', p.id), { score: 120, subscore: 0 }, 'the file keeps 120')
  t.same(await list(p.one, 'fx-best-desc'), listed(120), 'the first process lists 120')
  t.same(await list(p.two, 'fx-best-desc'), listed(120), 'the second process lists 120')
})

t.test('incr through two processes adds every accepted delta; a set through one is read by the other', async (t) => {
  const p = await player()
  const record = (board: string, score: number) => ({ leaderboard_id: board, owner_id: p.id, username: p.username, score, subscore: 0, rank: 1 })
  t.same(await submit(p.one, { leaderboardId: 'fx-incr-desc', score: 5 }), { status: 200, body: { success: true, record: record('fx-incr-desc', 5) } })
  t.same(await submit(p.two, { leaderboardId: 'fx-incr-desc', score: 7 }), { status: 200, body: { success: true, record: record('fx-incr-desc', 12) } })
  t.same(await submit(p.one, { leaderboardId: 'fx-incr-desc', score: 1 }), { status: 200, body: { success: true, record: record('fx-incr-desc', 13) } })
  t.same(storedScore('fx-incr-desc', p.id), { score: 13, subscore: 0 })
  t.same(await submit(p.one, { leaderboardId: 'fx-set-desc', score: 40 }), { status: 200, body: { success: true, record: record('fx-set-desc', 40) } })
  const own = { owner_id: p.id, username: p.username, score: 40, subscore: 0, rank: 1 }
  t.same(await list(p.two, 'fx-set-desc'), { status: 200, body: { success: true, records: [own], nextCursor: null, ownRecord: own } }, 'the other process lists the set score')
})

t.test('incr writes sent to both processes at once: every one answers 200 and the file holds their sum', async (t) => {
  const p = await player()
  const deltas = Array.from({ length: 60 }, (_, i) => i + 1)
  const results = await Promise.all(deltas.map((score, i) => submit(i % 2 ? p.two : p.one, { leaderboardId: 'fx-incr-asc', score, subscore: 1 })))
  t.same(results.map((r) => r.status), deltas.map(() => 200), 'every write is accepted')
  const total = deltas.reduce((a, b) => a + b, 0)
  t.same(storedScore('fx-incr-asc', p.id), { score: total, subscore: deltas.length }, 'no delta lost')
  const scores = results.map((r) => (r.body as { record: { score: number } }).record.score).sort((a, b) => a - b)
  t.equal(new Set(scores).size, deltas.length, 'each answer is a distinct stored total')
  t.equal(scores[scores.length - 1], total, 'the last answer is the sum')
})
