// npm run bench:leaderboard: rank queries and submissions in-process at 10k, 100k and 1M records
// beside an indexed SQLite COUNT(*), then POST /api/leaderboards/submit over HTTP with wrk.
import { randomUUID } from 'node:crypto'
import os from 'node:os'
import { performance } from 'node:perf_hooks'
import type Database from 'better-sqlite3'
import type { LeaderboardConfig } from '../lib/backend/backend.js'
import { openDatabase } from '../lib/backend/embedded/db.js'
import { LeaderboardStore, LEADERBOARD_MIGRATIONS } from '../lib/backend/embedded/leaderboards.js'
import { tempDir } from '../test/helpers/platform.js'
import { benchHttp } from './leaderboard-http.js'

const SIZES = [10_000, 100_000, 1_000_000]
const BOARD: LeaderboardConfig = { id: 'bench', operator: 'set', sortOrder: 'desc', resetSchedule: null, authoritative: false }
// Timed in rounds and reported as the median round, so other work on the machine moves the
// figures less than a single long run would.
const ROUNDS = 9
const RANK_QUERIES = 2_000
const COUNT_QUERIES = 20
const WRITES = 2_000
/** Writes in flight at once, as from 50 HTTP connections; each waits for its own commit. */
const IN_FLIGHT = 50
const TARGET = { rankMicros: 50, rankRatio: 3, writesPerSecond: 10_000, httpPerSecond: 5_000 }

/** The median over ROUNDS runs of `round`, each returning a duration in ms. */
async function medianMs(round: () => Promise<void>): Promise<number> {
  const times: number[] = []
  for (let r = 0; r < ROUNDS; r++) {
    const t0 = performance.now()
    await round()
    times.push(performance.now() - t0)
  }
  return times.sort((a, b) => a - b)[ROUNDS >> 1]!
}

let seed = 42
function random(n: number): number {
  seed = (seed * 1103515245 + 12345) % 2147483648
  return seed % n
}

/** Add rows up to `size` in one transaction (owners in key order, as a bulk load would), appending their owners to `owners`. */
function fill(db: Database.Database, owners: string[], size: number): void {
  const insert = db.prepare(
    `INSERT INTO leaderboard_records (leaderboard_id, expiry, owner_id, username, score, subscore, metadata, num_score, create_time, update_time)
     VALUES ('bench', 0, ?, ?, ?, ?, '{}', 1, 0, 0)`,
  )
  const added = Array.from({ length: size - owners.length }, () => randomUUID()).sort()
  db.transaction(() => {
    for (const id of added) insert.run(id, `player-${owners.push(id)}`, random(1_000_000), random(100))
  })()
}

async function main(): Promise<void> {
  const db = openDatabase(tempDir('playfield-bench-'), LEADERBOARD_MIGRATIONS)
  await new LeaderboardStore(db).syncLeaderboards([BOARD])
  const countRank = db.prepare(
    `SELECT COUNT(*) + 1 FROM leaderboard_records WHERE leaderboard_id = 'bench' AND expiry = 0
       AND (score > @s OR (score = @s AND (subscore > @u OR (subscore = @u AND owner_id > @o))))`,
  ).pluck()
  const getRow = db.prepare(`SELECT score, subscore FROM leaderboard_records WHERE leaderboard_id = 'bench' AND expiry = 0 AND owner_id = ?`)
  const owners: string[] = []
  const rows: Record<string, number>[] = []
  for (const size of SIZES) {
    let t0 = performance.now()
    fill(db, owners, size)
    const insertMs = performance.now() - t0
    t0 = performance.now()
    const store = new LeaderboardStore(db)
    await store.syncLeaderboards([BOARD])
    const loadMs = performance.now() - t0

    // One rank query: the caller's own record with its rank, as GET /api/leaderboards/{id} asks for it.
    const rankMs = await medianMs(async () => {
      for (let i = 0; i < RANK_QUERIES; i++) {
        const page = await store.listRecords({ leaderboardId: 'bench', limit: 1, ownerId: owners[random(owners.length)]! }, 0)
        if (!page.ownRecord) throw new Error('owner not ranked')
      }
    })
    const rankMicros = (rankMs * 1000) / RANK_QUERIES

    // The baseline's index exists only while it is measured: the store keeps no score index.
    db.exec('CREATE INDEX bench_rank ON leaderboard_records (leaderboard_id, expiry, score, subscore, owner_id)')
    const counted: [string, number][] = []
    t0 = performance.now()
    for (let i = 0; i < COUNT_QUERIES; i++) {
      const owner = owners[random(owners.length)]!
      const row = getRow.get(owner) as { score: number; subscore: number }
      counted.push([owner, countRank.get({ s: row.score, u: row.subscore, o: owner }) as number])
    }
    const countMicros = ((performance.now() - t0) * 1000) / COUNT_QUERIES
    for (const [ownerId, rank] of counted) {
      const own = (await store.listRecords({ leaderboardId: 'bench', limit: 1, ownerId }, 0)).ownRecord
      if (own?.rank !== rank) throw new Error(`rank index says ${own?.rank}, COUNT(*) says ${rank}`)
    }
    db.exec('DROP INDEX bench_rank')

    // Submissions: every write changes the record (set, random score), so every one is committed.
    const writeMs = await medianMs(async () => {
      for (let done = 0; done < WRITES; done += IN_FLIGHT) {
        const wave = []
        for (let i = 0; i < IN_FLIGHT; i++) {
          const ownerId = owners[random(owners.length)]!
          wave.push(store.writeRecord({ leaderboardId: 'bench', ownerId, username: 'p', score: random(1_000_000), subscore: random(100) }, 0))
        }
        await Promise.all(wave)
      }
    })
    const writesPerSecond = WRITES / (writeMs / 1000)
    rows.push({ size, insertMs, loadMs, rankMicros, countMicros, writesPerSecond })
  }
  db.close()

  console.log(`\nload average (1 min) at the end of the in-process part: ${os.loadavg()[0]!.toFixed(1)} on ${os.cpus().length} CPUs`)
  console.log('\nIn-process (embedded store, one leaderboard, SQLite WAL, each write committed before it resolves)')
  console.table(
    rows.map((r) => ({
      records: r.size!.toLocaleString('en'),
      'bulk insert ms': Math.round(r.insertMs!),
      'index fill ms': Math.round(r.loadMs!),
      'rank query µs': +r.rankMicros!.toFixed(2),
      'COUNT(*) rank µs': Math.round(r.countMicros!),
      'index speed-up': `${Math.round(r.countMicros! / r.rankMicros!)}x`,
      [`writes/s (${IN_FLIGHT} in flight)`]: Math.round(r.writesPerSecond!),
    })),
  )
  const small = rows[0]!
  const large = rows[rows.length - 1]!
  const http = await benchHttp()
  console.log(`\nload average (1 min) after the HTTP part: ${os.loadavg()[0]!.toFixed(1)}`)
  console.log('\nHTTP: POST /api/leaderboards/submit, wrk, 50 connections, 1000 signed-in users')
  console.table([{ 'req/s': Math.round(http.requestsPerSecond), 'p99 ms': +http.p99Ms.toFixed(2), 'non-2xx': http.non2xx, requests: http.requests }])
  console.log('\nAgainst the targets (ratio <= 1 meets it)')
  console.table([
    { check: 'rank query at 1M <= 50 µs', measured: `${large.rankMicros!.toFixed(2)} µs`, ratio: +(large.rankMicros! / TARGET.rankMicros).toFixed(3) },
    { check: 'rank at 1M within 3x of 10k', measured: `${(large.rankMicros! / small.rankMicros!).toFixed(2)}x`, ratio: +(large.rankMicros! / small.rankMicros! / TARGET.rankRatio).toFixed(3) },
    { check: 'writes/s at 1M >= 10,000', measured: Math.round(large.writesPerSecond!), ratio: +(TARGET.writesPerSecond / large.writesPerSecond!).toFixed(3) },
    { check: 'HTTP submit >= 5,000 req/s', measured: Math.round(http.requestsPerSecond), ratio: +(TARGET.httpPerSecond / http.requestsPerSecond).toFixed(3) },
  ])
}

await main()
