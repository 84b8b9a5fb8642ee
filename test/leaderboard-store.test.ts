import t from 'tap'
import path from 'node:path'
import Database from 'better-sqlite3'
import { openDatabase } from '../lib/backend/embedded/db.js'
import { LeaderboardStore, LEADERBOARD_MIGRATIONS } from '../lib/backend/embedded/leaderboards.js'
import type { LeaderboardConfig } from '../lib/backend/backend.js'
import { compareRank, type SortOrder } from '../lib/leaderboard.js'
import { HttpError } from '../lib/http/errors.js'
import { tempDir } from './helpers/platform.js'

const NOW = Date.parse('2026-11-21T06:00:00Z')
const board = (id: string, operator: LeaderboardConfig['operator'], sortOrder: SortOrder, resetSchedule: string | null = null): LeaderboardConfig => ({
  id,
  operator,
  sortOrder,
  resetSchedule,
  authoritative: false,
})
const BOARDS = [
  board('best-desc', 'best', 'desc'),
  board('best-asc', 'best', 'asc'),
  board('set-desc', 'set', 'desc'),
  board('set-asc', 'set', 'asc'),
  board('incr-desc', 'incr', 'desc'),
  board('incr-asc', 'incr', 'asc'),
  board('daily', 'best', 'desc', '0 0 * * *'),
]

async function open(dir = tempDir()) {
  const db = openDatabase(dir, LEADERBOARD_MIGRATIONS)
  const store = new LeaderboardStore(db)
  await store.syncLeaderboards(BOARDS)
  const row = (boardId: string, owner: string) =>
    db.prepare('SELECT username, score, subscore, metadata, num_score, expiry FROM leaderboard_records WHERE leaderboard_id = ? AND owner_id = ? ORDER BY expiry DESC').get(boardId, owner)
  return { db, store, row, dir }
}

const write = (leaderboardId: string, ownerId: string, score: number, subscore = 0, metadata?: string, username = `name-${ownerId}`) => ({
  leaderboardId,
  ownerId,
  username,
  score,
  subscore,
  metadata,
})

t.test('every operator and sort order, with and without subscore, as stored and answered', async (t) => {
  const { store, row } = await open()
  // [board, [score, subscore] written in turn, the stored pair after each write]
  const table: [string, [number, number][], [number, number][]][] = [
    ['best-desc', [[100, 5], [90, 9], [110, 1], [100, 0]], [[100, 5], [100, 9], [110, 9], [110, 9]]],
    ['best-asc', [[100, 5], [90, 9], [110, 1], [100, 9]], [[100, 5], [90, 5], [90, 1], [90, 1]]],
    ['set-desc', [[100, 5], [90, 9], [90, 9], [0, 0]], [[100, 5], [90, 9], [90, 9], [0, 0]]],
    ['set-asc', [[100, 0], [120, 0], [120, 0], [5, 2]], [[100, 0], [120, 0], [120, 0], [5, 2]]],
    ['incr-desc', [[100, 5], [10, 1], [0, 0], [0, 4]], [[100, 5], [110, 6], [110, 6], [110, 10]]],
    ['incr-asc', [[3, 0], [4, 0], [0, 0], [1, 0]], [[3, 0], [7, 0], [7, 0], [8, 0]]],
  ]
  for (const [id, writes, stored] of table) {
    for (let i = 0; i < writes.length; i++) {
      const [score, subscore] = writes[i]!
      const record = await store.writeRecord(write(id, 'u1', score, subscore), NOW)
      const [wantScore, wantSub] = stored[i]!
      t.same(record, { leaderboard_id: id, owner_id: 'u1', username: 'name-u1', score: wantScore, subscore: wantSub, rank: 1 }, `${id} write ${i}`)
      t.match(row(id, 'u1'), { score: wantScore, subscore: wantSub }, `${id} write ${i} in the database`)
    }
  }
})

t.test('a write that changes nothing keeps metadata, username and the write count', async (t) => {
  const { store, row } = await open()
  await store.writeRecord(write('best-desc', 'u1', 50, 0, '{"lap":1}', 'first'), NOW)
  t.same(row('best-desc', 'u1'), { username: 'first', score: 50, subscore: 0, metadata: '{"lap":1}', num_score: 1, expiry: 0 })
  const same = await store.writeRecord(write('best-desc', 'u1', 40, 0, '{"lap":2}', 'second'), NOW)
  t.same(same, { leaderboard_id: 'best-desc', owner_id: 'u1', username: 'first', score: 50, subscore: 0, rank: 1 })
  t.same(row('best-desc', 'u1'), { username: 'first', score: 50, subscore: 0, metadata: '{"lap":1}', num_score: 1, expiry: 0 })
  await store.writeRecord(write('best-desc', 'u1', 60, 0, undefined, 'third'), NOW)
  t.same(row('best-desc', 'u1'), { username: 'third', score: 60, subscore: 0, metadata: '{"lap":1}', num_score: 2, expiry: 0 }, 'kept metadata when none is sent')
  await store.writeRecord(write('best-desc', 'u1', 70, 0, '{"__proto__":{"x":1}}', 'third'), NOW)
  t.same(row('best-desc', 'u1'), { username: 'third', score: 70, subscore: 0, metadata: '{"__proto__":{"x":1}}', num_score: 3, expiry: 0 })
  await store.writeRecord(write('incr-desc', 'u2', 0, 0), NOW)
  t.same(row('incr-desc', 'u2'), { username: 'name-u2', score: 0, subscore: 0, metadata: '{}', num_score: 1, expiry: 0 }, 'a first incr of 0 creates the record')
})

t.test('a write that changes nothing waits for the write it repeats, and fails with it', async (t) => {
  const { db, store, row, dir } = await open()
  db.pragma('busy_timeout = 100')
  const other = new Database(path.join(dir, 'playfield.sqlite'))
  other.exec('BEGIN IMMEDIATE')
  // The same score twice in one turn: the second changes nothing in memory, the first is not on disk yet.
  const results = await Promise.allSettled([store.writeRecord(write('best-desc', 'np', 100), NOW), store.writeRecord(write('best-desc', 'np', 100), NOW)])
  other.exec('ROLLBACK')
  t.same(results.map((r) => r.status), ['rejected', 'rejected'], 'neither is confirmed')
  for (const result of results) t.match((result as PromiseRejectedResult).reason, { status: 503, code: 'BACKEND_UNAVAILABLE' })
  t.equal(row('best-desc', 'np'), undefined, 'nothing stored')
  const ok = await Promise.all([store.writeRecord(write('best-desc', 'np', 100), NOW), store.writeRecord(write('best-desc', 'np', 100), NOW)])
  t.same(ok.map((r) => r.score), [100, 100], 'once the file is free, both are confirmed')
  t.match(row('best-desc', 'np'), { score: 100 })
  other.close()
})

t.test('incr past 2^53-1 is 400 and changes nothing', async (t) => {
  const { store, row } = await open()
  await store.writeRecord(write('incr-desc', 'u1', Number.MAX_SAFE_INTEGER - 1), NOW)
  await t.rejects(store.writeRecord(write('incr-desc', 'u1', 2), NOW), { status: 400, code: 'VALIDATION_FAILED', details: [{ path: '/score', message: 'the stored score would pass 2^53-1' }] })
  t.match(row('incr-desc', 'u1'), { score: Number.MAX_SAFE_INTEGER - 1, num_score: 1 })
  await store.writeRecord(write('incr-desc', 'u2', 1, Number.MAX_SAFE_INTEGER), NOW)
  await t.rejects(store.writeRecord(write('incr-desc', 'u2', 1, 1), NOW), { status: 400, code: 'VALIDATION_FAILED', details: [{ path: '/subscore', message: 'the stored subscore would pass 2^53-1' }] })
  t.match(row('incr-desc', 'u2'), { score: 1, subscore: Number.MAX_SAFE_INTEGER })
  const page = await store.listRecords({ leaderboardId: 'incr-desc', limit: 5 }, NOW)
  t.equal(page.records[0]!.score, Number.MAX_SAFE_INTEGER - 1)
})

t.test('ranks with many users and ties follow score, subscore, owner id in the sort direction', async (t) => {
  const { store, dir, db } = await open()
  for (const order of ['desc', 'asc'] as const) {
    const id = `set-${order}`
    const want = new Map<string, { ownerId: string; score: number; subscore: number }>()
    const writes = []
    for (let i = 0; i < 500; i++) {
      const ownerId = `user-${(i * 37) % 211}`
      const score = (i * 13) % 7
      const subscore = i % 3
      want.set(ownerId, { ownerId, score, subscore })
      writes.push(store.writeRecord(write(id, ownerId, score, subscore), NOW))
    }
    await Promise.all(writes)
    const sorted = [...want.values()].sort((a, b) => compareRank(a, b, order))
    const page = await store.listRecords({ leaderboardId: id, limit: 1000 }, NOW)
    t.same(page.records.map((r) => [r.owner_id, r.score, r.subscore, r.rank]), sorted.map((k, i) => [k.ownerId, k.score, k.subscore, i + 1]), `${order}: listing`)
    const again = await store.writeRecord(write(id, sorted[100]!.ownerId, sorted[100]!.score, sorted[100]!.subscore), NOW)
    t.equal(again.rank, 101, `${order}: rank answered by a no-op write`)
  }
  // A restart refills the index from SQLite with the same ranks.
  const before = await store.listRecords({ leaderboardId: 'set-asc', limit: 100, ownerId: 'user-5' }, NOW)
  db.close()
  const reopened = await open(dir)
  t.same(await reopened.store.listRecords({ leaderboardId: 'set-asc', limit: 100, ownerId: 'user-5' }, NOW), before, 'same page after reopening')
  t.not(before.ownRecord, null)
})

t.test('pages cover every record exactly once, with writes of others between pages', async (t) => {
  const { store } = await open()
  for (let i = 0; i < 137; i++) await store.writeRecord(write('best-desc', `p${i}`, i % 17, i % 2), NOW)
  const seen = new Set<string>()
  let cursor: string | undefined
  let pages = 0
  do {
    const page = await store.listRecords({ leaderboardId: 'best-desc', limit: 20, cursor }, NOW)
    pages++
    for (const r of page.records) {
      t.notOk(seen.has(r.owner_id), `${r.owner_id} once`)
      seen.add(r.owner_id)
    }
    // newcomers above and below the cursor must not shift the next page
    await store.writeRecord(write('best-desc', `top${pages}`, 1000), NOW)
    cursor = page.nextCursor ?? undefined
    if (cursor === undefined) t.ok(page.records.length > 0 && page.records.length <= 20)
  } while (cursor !== undefined)
  const originals = [...seen].filter((id) => id.startsWith('p'))
  t.equal(originals.length, 137, 'every original record seen')
  t.equal(pages, 7)
})

t.test('cursors are checked: garbage, another board, an ended period', async (t) => {
  const { store } = await open()
  for (let i = 0; i < 5; i++) {
    await store.writeRecord(write('daily', `d${i}`, i), NOW)
    await store.writeRecord(write('best-asc', `d${i}`, i), NOW)
  }
  const page = await store.listRecords({ leaderboardId: 'daily', limit: 2 }, NOW)
  t.type(page.nextCursor, 'string')
  for (const bad of ['%%%', 'abc', Buffer.from('{"l":"daily"}').toString('base64url'), Buffer.from('[1]').toString('base64url')]) {
    await t.rejects(store.listRecords({ leaderboardId: 'daily', limit: 2, cursor: bad }, NOW), { status: 400, code: 'VALIDATION_FAILED' }, bad)
  }
  await t.rejects(store.listRecords({ leaderboardId: 'best-asc', limit: 2, cursor: page.nextCursor! }, NOW), { status: 400, code: 'VALIDATION_FAILED' })
  await t.rejects(store.listRecords({ leaderboardId: 'daily', limit: 2, cursor: page.nextCursor! }, NOW + 86_400_000), { status: 400, code: 'VALIDATION_FAILED' })
  await t.rejects(store.listRecords({ leaderboardId: 'nope', limit: 2 }, NOW), new HttpError(404, 'LEADERBOARD_NOT_FOUND', 'no leaderboard "nope"'))
  await t.rejects(store.writeRecord(write('nope', 'u', 1), NOW), { status: 404, code: 'LEADERBOARD_NOT_FOUND' })
})

t.test('a reset starts an empty period; the old one stays in the database, not served', async (t) => {
  const { store, db } = await open()
  const day1 = Date.parse('2026-11-21T23:59:59.000Z')
  const day2 = Date.parse('2026-11-22T00:00:00.000Z')
  await store.writeRecord(write('daily', 'a', 10), day1)
  await store.writeRecord(write('daily', 'b', 20), day1)
  t.same((await store.listRecords({ leaderboardId: 'daily', limit: 10, ownerId: 'a' }, day1)).ownRecord, {
    leaderboard_id: 'daily', owner_id: 'a', username: 'name-a', score: 10, subscore: 0, rank: 2,
  })
  t.same(await store.listRecords({ leaderboardId: 'daily', limit: 10, ownerId: 'a' }, day2), { records: [], nextCursor: null, ownRecord: null }, 'empty at the reset')
  const fresh = await store.writeRecord(write('daily', 'a', 5), day2)
  t.same(fresh, { leaderboard_id: 'daily', owner_id: 'a', username: 'name-a', score: 5, subscore: 0, rank: 1 }, 'best starts over: 5 is stored although 10 was better')
  const rows = db.prepare("SELECT owner_id, score, expiry FROM leaderboard_records WHERE leaderboard_id = 'daily' ORDER BY expiry, owner_id").all()
  t.same(rows, [
    { owner_id: 'a', score: 10, expiry: day2 },
    { owner_id: 'b', score: 20, expiry: day2 },
    { owner_id: 'a', score: 5, expiry: day2 + 86_400_000 },
  ])
})

t.test('a changed configuration replaces the stored one and re-ranks', async (t) => {
  const { store, db } = await open()
  await store.writeRecord(write('set-desc', 'a', 1), NOW)
  await store.writeRecord(write('set-desc', 'b', 2), NOW)
  t.equal((await store.listRecords({ leaderboardId: 'set-desc', limit: 5 }, NOW)).records[0]!.owner_id, 'b')
  await store.syncLeaderboards([board('set-desc', 'incr', 'asc')])
  t.equal((await store.listRecords({ leaderboardId: 'set-desc', limit: 5 }, NOW)).records[0]!.owner_id, 'a', 'ascending now')
  t.equal((await store.writeRecord(write('set-desc', 'a', 5), NOW)).score, 6, 'incr now')
  t.same(db.prepare("SELECT operator, sort_order FROM leaderboards WHERE id = 'set-desc'").get(), { operator: 'incr', sort_order: 'asc' })
  await t.rejects(store.writeRecord(write('best-desc', 'a', 5), NOW), { status: 404, code: 'LEADERBOARD_NOT_FOUND' }, 'a board gone from the catalogue is not served')
})

t.test('a configuration changed while writes wait for their commit keeps them: none is lost, none inserted twice', async (t) => {
  const { store, row } = await open()
  await store.writeRecord(write('incr-desc', 'a', 1), NOW)
  // Both writes are in memory and queued, not committed, when the reload rebuilds the board.
  const queued = [store.writeRecord(write('incr-desc', 'a', 1), NOW), store.writeRecord(write('incr-desc', 'b', 1), NOW)]
  await store.syncLeaderboards([...BOARDS.filter((b) => b.id !== 'incr-desc'), board('incr-desc', 'incr', 'asc')])
  t.same((await Promise.all(queued)).map((r) => r.score), [2, 1])
  t.same((await store.writeRecord(write('incr-desc', 'a', 1), NOW)).score, 3, 'builds on the committed 2')
  t.same((await store.writeRecord(write('incr-desc', 'b', 1), NOW)).score, 2, 'an update, not a second insert')
  t.same([row('incr-desc', 'a'), row('incr-desc', 'b')].map((r) => (r as { score: number }).score), [3, 2])
  const page = await store.listRecords({ leaderboardId: 'incr-desc', limit: 5 }, NOW)
  t.same(page.records.map((r) => [r.owner_id, r.score, r.rank]), [['b', 2, 1], ['a', 3, 2]], 'served as stored, ascending now')
})

t.test('a rename names the owner on every record: other periods, and boards out of the catalogue now, served again later', async (t) => {
  const { store, db } = await open()
  const day1 = Date.parse('2026-11-21T12:00:00Z')
  const day2 = Date.parse('2026-11-22T12:00:00Z')
  await store.writeRecord(write('daily', 'a', 10, 0, undefined, 'old'), day1)
  await store.writeRecord(write('best-desc', 'a', 10, 0, undefined, 'old'), day1)
  await store.writeRecord(write('daily', 'a', 20, 0, undefined, 'old'), day2)
  await store.syncLeaderboards(BOARDS.filter((b) => b.id !== 'best-desc'))
  store.renameOwner('a', 'new')()
  t.same(db.prepare("SELECT DISTINCT username FROM leaderboard_records WHERE owner_id = 'a'").all(), [{ username: 'new' }], 'every stored record')
  t.equal((await store.listRecords({ leaderboardId: 'daily', limit: 5, ownerId: 'a' }, day2)).ownRecord?.username, 'new', 'the period in memory')
  await store.syncLeaderboards(BOARDS)
  t.equal((await store.listRecords({ leaderboardId: 'best-desc', limit: 5 }, day2)).records[0]?.username, 'new', 'a board back in the catalogue')
  t.equal((await store.writeRecord(write('daily', 'a', 1, 0, undefined, 'old'), day2)).username, 'new', 'a write that changes nothing answers the new name')
})

t.test('a launch is stored with its session id, game, user and time', async (t) => {
  const { store, db } = await open()
  await store.recordLaunch({ sessionId: 's1', gameId: 'g', userId: 'u', time: NOW })
  t.same(db.prepare('SELECT * FROM launches').all(), [{ session_id: 's1', game_id: 'g', user_id: 'u', launched_at: NOW }])
})

t.test('a write the database refuses is rejected alone; the others of its batch commit and memory follows the database', async (t) => {
  const { store, db } = await open()
  await store.writeRecord(write('best-desc', 'boom', 1), NOW)
  db.exec(`CREATE TRIGGER refuse BEFORE UPDATE ON leaderboard_records WHEN NEW.owner_id = 'boom' BEGIN SELECT RAISE(ABORT, 'refused'); END`)
  const results = await Promise.allSettled([
    store.writeRecord(write('best-desc', 'a', 10), NOW),
    store.writeRecord(write('best-desc', 'boom', 50), NOW),
    store.writeRecord(write('best-desc', 'b', 20), NOW),
  ])
  t.same(results.map((r) => r.status), ['fulfilled', 'rejected', 'fulfilled'])
  const page = await store.listRecords({ leaderboardId: 'best-desc', limit: 10 }, NOW)
  t.same(page.records.map((r) => [r.owner_id, r.score, r.rank]), [['b', 20, 1], ['a', 10, 2], ['boom', 1, 3]], 'the refused score is not served')
})

t.test('a write built on one the database refused in the same batch is refused with it, never confirmed', async (t) => {
  const { store, db, row } = await open()
  await store.writeRecord(write('incr-desc', 'c', 5), NOW)
  // SQLite refuses the first write of each owner (as a full disk does); the second would be an
  // UPDATE of a row never inserted (changing nothing) or an incr on a sum never stored.
  db.exec(`CREATE TEMP TRIGGER refuse_insert BEFORE INSERT ON leaderboard_records WHEN NEW.owner_id = 'new' BEGIN SELECT RAISE(ABORT, 'refused'); END`)
  db.exec(`CREATE TEMP TRIGGER refuse_update BEFORE UPDATE ON leaderboard_records WHEN NEW.owner_id = 'c' AND NEW.score = 6 BEGIN SELECT RAISE(ABORT, 'refused'); END`)
  const results = await Promise.allSettled([
    store.writeRecord(write('best-desc', 'new', 10), NOW),
    store.writeRecord(write('best-desc', 'new', 20), NOW),
    store.writeRecord(write('incr-desc', 'c', 1), NOW),
    store.writeRecord(write('incr-desc', 'c', 2), NOW),
    store.writeRecord(write('best-desc', 'other', 30), NOW),
  ])
  t.same(results.map((r) => r.status), ['rejected', 'rejected', 'rejected', 'rejected', 'fulfilled'])
  t.equal(row('best-desc', 'new'), undefined, 'nothing stored for the refused owner')
  t.match(row('incr-desc', 'c'), { score: 5 }, 'the sum is as it was')
  const page = await store.listRecords({ leaderboardId: 'best-desc', limit: 10 }, NOW)
  t.same(page.records.map((r) => [r.owner_id, r.score]), [['other', 30]], 'memory follows the database')
  t.equal((await store.writeRecord(write('incr-desc', 'c', 2), NOW)).score, 7, 'the next write builds on what is stored')
})

t.test('a rename whose transaction fails leaves the names served as they were', async (t) => {
  const { store, db } = await open()
  await store.writeRecord(write('best-desc', 'a', 10, 0, undefined, 'old'), NOW)
  t.throws(() => db.transaction(() => {
    store.renameOwner('a', 'new')
    throw new Error('the commit failed')
  })())
  t.same(db.prepare("SELECT DISTINCT username FROM leaderboard_records WHERE owner_id = 'a'").all(), [{ username: 'old' }])
  t.equal((await store.listRecords({ leaderboardId: 'best-desc', limit: 5 }, NOW)).records[0]?.username, 'old')
})

t.test('a write that changes nothing answers the rank its record has then, not that of a later write in the same turn', async (t) => {
  const { store } = await open()
  for (const [i, owner] of ['x', 'y', 'z'].entries()) await store.writeRecord(write('best-desc', owner, 1000 + i), NOW)
  const answers = await Promise.all([10, 5, 5000].map((score) => store.writeRecord(write('best-desc', 'a', score), NOW)))
  t.same(answers.map((r) => [r.score, r.rank]), [[10, 4], [10, 4], [5000, 1]])
})

/** `count` stores on one file (platform processes on one DATA_DIR), and a connection that changes it as no store does. */
async function sharedFile(t: { teardown: (fn: () => void) => void }, count: number) {
  const dir = tempDir()
  const stores = []
  for (let i = 0; i < count; i++) stores.push(await open(dir))
  const raw = new Database(path.join(dir, 'playfield.sqlite'))
  t.teardown(() => raw.close())
  return { a: stores[0]!, b: stores[1]!, raw }
}

// Two stores on one file are two platform processes on one DATA_DIR. A store reads a board again
// only once another has written to it (its generation moved): not after every commit to the file,
// such as a role granted with `bin/platform users`, which would make a board of a million records
// block the event loop for seconds while it is read again.
t.test('a store reads again only the boards another process wrote to, not after every commit to the file', async (t) => {
  const { a, b, raw } = await sharedFile(t, 2)
  await a.store.writeRecord(write('best-desc', 'p1', 10), NOW)
  await a.store.writeRecord(write('set-desc', 'p1', 10), NOW)
  const scores = async (id: string) => (await a.store.listRecords({ leaderboardId: id, limit: 10 }, NOW)).records.map((r) => [r.owner_id, r.score])
  // A change no store makes, and so no board's generation moves (an account's row, in the file's
  // terms): a store that read its boards again after it would show 77.
  raw.prepare("UPDATE leaderboard_records SET score = 77 WHERE owner_id = 'p1'").run()
  t.same(await scores('best-desc'), [['p1', 10]], 'an unrelated commit: best-desc is served from memory')
  t.same(await scores('set-desc'), [['p1', 10]], 'an unrelated commit: set-desc is served from memory')
  // The other store writes best-desc: that board is read again, with everything the file holds.
  await b.store.writeRecord(write('best-desc', 'p2', 5), NOW)
  t.same(await scores('best-desc'), [['p1', 77], ['p2', 5]], 'best-desc, written by the other store, is read again')
  t.same(await scores('set-desc'), [['p1', 10]], 'set-desc, which it did not write, is not')
  // And a rename by the other store reads again the boards its owner has records on.
  raw.prepare("UPDATE leaderboard_records SET score = 88 WHERE owner_id = 'p1' AND leaderboard_id = 'set-desc'").run()
  b.db.transaction(() => b.store.renameOwner('p1', 'renamed'))()()
  t.same((await a.store.listRecords({ leaderboardId: 'set-desc', limit: 10 }, NOW)).records.map((r) => [r.username, r.score]), [['renamed', 88]], 'a rename by the other store: its boards are read again')
})

t.test('a store keeps serving from memory after its own writes and renames, and after the other store\'s reads', async (t) => {
  const { a, b, raw } = await sharedFile(t, 2)
  await a.store.writeRecord(write('incr-desc', 'p1', 1), NOW)
  t.same((await b.store.listRecords({ leaderboardId: 'incr-desc', limit: 10 }, NOW)).records.map((r) => r.score), [1], 'the other store reads the write')
  raw.prepare("UPDATE leaderboard_records SET score = 50 WHERE owner_id = 'p2'").run() // nothing: no such row, no board moved
  await a.store.writeRecord(write('incr-desc', 'p1', 2), NOW)
  a.db.transaction(() => a.store.renameOwner('p1', 'own-name'))()()
  t.same((await a.store.listRecords({ leaderboardId: 'incr-desc', limit: 10 }, NOW)).records.map((r) => [r.username, r.score]), [['own-name', 3]], 'its own write and rename are in memory')
  t.same((await b.store.listRecords({ leaderboardId: 'incr-desc', limit: 10 }, NOW)).records.map((r) => [r.username, r.score]), [['own-name', 3]], 'and read by the other store')
  t.same(await b.store.writeRecord(write('incr-desc', 'p1', 4, 0, undefined, 'own-name'), NOW), { leaderboard_id: 'incr-desc', owner_id: 'p1', username: 'own-name', score: 7, subscore: 0, rank: 1 }, 'the other store adds to the stored 3')
  t.same(await a.store.writeRecord(write('incr-desc', 'p1', 1, 0, undefined, 'own-name'), NOW), { leaderboard_id: 'incr-desc', owner_id: 'p1', username: 'own-name', score: 8, subscore: 0, rank: 1 }, 'and this one to the stored 7')
})

// A lost race (another process stored the record between this one's decision and its commit) fails
// the group commit's batch; only the boards that batch wrote are behind memory. Reading every board
// again after it would block the event loop for seconds per race on a board of a million records.
t.test('a lost race in the group commit reads again the board it wrote, not every board', async (t) => {
  const { a, b, raw } = await sharedFile(t, 2)
  await a.store.writeRecord(write('best-desc', 'p1', 10), NOW)
  await a.store.writeRecord(write('set-desc', 'p1', 10), NOW)
  // No generation moves: a store that reads set-desc again would show 77.
  raw.prepare("UPDATE leaderboard_records SET score = 77 WHERE leaderboard_id = 'set-desc'").run()
  const decided = a.store.writeRecord(write('best-desc', 'p1', 30), NOW) // decided on 10, queued
  const other = b.store.writeRecord(write('best-desc', 'p1', 20), NOW)
  b.store.flush() // the other process commits 20 first: a's batch finds 20, not 10
  await other
  t.match(await decided, { score: 30, rank: 1 }, 'decided again and stored')
  t.same(a.row('best-desc', 'p1'), { username: 'name-p1', score: 30, subscore: 0, metadata: '{}', num_score: 3, expiry: 0 })
  const scores = async (id: string) => (await a.store.listRecords({ leaderboardId: id, limit: 10 }, NOW)).records.map((r) => [r.owner_id, r.score])
  t.same(await scores('best-desc'), [['p1', 30]])
  t.same(await scores('set-desc'), [['p1', 10]], 'set-desc, which the batch did not write, is served from memory')
})

// The test above cannot tell memory from a fresh read (the file matches memory there): a change no
// store makes, on another owner's record, shows which one answers.
t.test('after its own write and rename a store answers from memory, not from a fresh read of the board', async (t) => {
  const { a, raw } = await sharedFile(t, 1)
  await a.store.writeRecord(write('incr-desc', 'p1', 1), NOW)
  await a.store.writeRecord(write('incr-desc', 'p2', 1), NOW)
  raw.prepare("UPDATE leaderboard_records SET score = 50 WHERE owner_id = 'p2'").run() // no generation moves
  const listed = async () => (await a.store.listRecords({ leaderboardId: 'incr-desc', limit: 10 }, NOW)).records.map((r) => [r.owner_id, r.username, r.score])
  await a.store.writeRecord(write('incr-desc', 'p1', 2), NOW)
  t.same(await listed(), [['p1', 'name-p1', 3], ['p2', 'name-p2', 1]], 'its own write: memory')
  a.db.transaction(() => a.store.renameOwner('p1', 'own-name'))()()
  t.same(await listed(), [['p1', 'own-name', 3], ['p2', 'name-p2', 1]], 'its own rename: memory')
})

t.test('a cursor issued before cursors named the board\'s order (no `d`) still pages, in the board\'s order', async (t) => {
  const { store } = await open()
  for (const [owner, score] of [['c1', 30], ['c2', 20], ['c3', 10]] as const) await store.writeRecord(write('best-desc', owner, score), NOW)
  const first = await store.listRecords({ leaderboardId: 'best-desc', limit: 1 }, NOW)
  const fields = JSON.parse(Buffer.from(first.nextCursor!, 'base64url').toString('utf8')) as Record<string, unknown>
  t.equal(fields.d, 'desc', 'a cursor names the order now')
  delete fields.d
  const legacy = Buffer.from(JSON.stringify(fields), 'utf8').toString('base64url')
  const viaLegacy = await store.listRecords({ leaderboardId: 'best-desc', limit: 1, cursor: legacy }, NOW)
  t.same(viaLegacy, await store.listRecords({ leaderboardId: 'best-desc', limit: 1, cursor: first.nextCursor! }, NOW), 'the same page as the new cursor gives')
  t.same(viaLegacy.records.map((r) => r.owner_id), ['c2'])
})

// CONTRACT §3: score and subscore are integers from 0 to 2^53-1, so an incr may land on the bound itself.
t.test('incr up to exactly 2^53-1 is stored and answered; only past it is refused', async (t) => {
  const { store, row } = await open()
  const max = Number.MAX_SAFE_INTEGER
  await store.writeRecord(write('incr-desc', 'u1', max - 1, max - 1), NOW)
  t.same(await store.writeRecord(write('incr-desc', 'u1', 1, 1), NOW), { leaderboard_id: 'incr-desc', owner_id: 'u1', username: 'name-u1', score: max, subscore: max, rank: 1 })
  t.match(row('incr-desc', 'u1'), { score: max, subscore: max, num_score: 2 })
  await t.rejects(store.writeRecord(write('incr-desc', 'u1', 1, 0), NOW), { status: 400, code: 'VALIDATION_FAILED' }, 'one more is past it')
})

// README "A changed configuration": a new schedule starts a new period; removing the schedule
// serves the one never-ending period again, not the records of the period left behind.
t.test('a reload that gives a board a reset schedule, or takes it away, serves the period the schedule names now', async (t) => {
  const { store } = await open()
  const listed = async () => (await store.listRecords({ leaderboardId: 'best-desc', limit: 10 }, NOW)).records.map((r) => [r.owner_id, r.score])
  await store.writeRecord(write('best-desc', 'never', 10), NOW)
  await store.syncLeaderboards([board('best-desc', 'best', 'desc', '0 0 * * *')])
  t.same(await listed(), [], 'daily now: a new period, empty')
  t.same(await store.writeRecord(write('best-desc', 'today', 5), NOW), { leaderboard_id: 'best-desc', owner_id: 'today', username: 'name-today', score: 5, subscore: 0, rank: 1 })
  t.same(await listed(), [['today', 5]])
  await store.syncLeaderboards([board('best-desc', 'best', 'desc')])
  t.same(await listed(), [['never', 10]], 'no schedule again: the never-ending period, without the daily one\'s records')
})

// README "Cursors": a cursor of another board is 400, also where the board, period and order
// checks would let it through (both boards never reset and rank descending).
t.test('a cursor of another board is refused also when both share the period and the order', async (t) => {
  const { store } = await open()
  for (const id of ['best-desc', 'set-desc']) for (let i = 0; i < 3; i++) await store.writeRecord(write(id, `c${i}`, i), NOW)
  const page = await store.listRecords({ leaderboardId: 'best-desc', limit: 1 }, NOW)
  await t.rejects(store.listRecords({ leaderboardId: 'set-desc', limit: 1, cursor: page.nextCursor! }, NOW), {
    status: 400, code: 'VALIDATION_FAILED', message: 'cursor belongs to another leaderboard',
  })
})

// README: a changing write takes the account's current name, read by the backend at the write. A
// read served while the write's commit is still queued shows that name too, not the session's.
t.test('a written record carries the owner\'s name now, also in a read served before its commit', async (t) => {
  const db = openDatabase(tempDir(), LEADERBOARD_MIGRATIONS)
  const store = new LeaderboardStore(db, (ownerId) => (ownerId === 'u1' ? 'current' : undefined))
  await store.syncLeaderboards(BOARDS)
  const written = store.writeRecord(write('best-desc', 'u1', 10, 0, undefined, 'remembered'), NOW)
  const page = await store.listRecords({ leaderboardId: 'best-desc', limit: 5 }, NOW)
  t.same(page.records.map((r) => r.username), ['current'], 'read while the commit is queued')
  t.equal((await written).username, 'current')
})

// The other process commits between this store's decision on a write and its commit: this store's
// commit raises the board's generation by two, so memory lacks the other's record and is read again.
t.test('another process committing to a board between this store\'s decision and its commit: the board is read again', async (t) => {
  const { a, b } = await sharedFile(t, 2)
  await a.store.writeRecord(write('best-desc', 'p1', 10), NOW)
  const mine = a.store.writeRecord(write('best-desc', 'p1', 20), NOW) // decided, queued
  const theirs = b.store.writeRecord(write('best-desc', 'p2', 15), NOW)
  b.store.flush() // committed before a's batch
  await theirs
  t.match(await mine, { score: 20, rank: 1 })
  const listed = (await a.store.listRecords({ leaderboardId: 'best-desc', limit: 10 }, NOW)).records.map((r) => [r.owner_id, r.score, r.rank])
  t.same(listed, [['p1', 20, 1], ['p2', 15, 2]], 'the other process\'s record is served')
})
