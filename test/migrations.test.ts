import path from 'node:path'
import t from 'tap'
import Database from 'better-sqlite3'
import { Client, runPlatformCommand, runUsers, startPlatform, tempDir } from './helpers/platform.js'

const BOARD = 'neon-highest'

/** A SQL statement on the platform's database file (the platform stopped). */
function sql<T>(dataDir: string, statement: string, ...params: unknown[]): T[] {
  const db = new Database(path.join(dataDir, 'playfield.sqlite'))
  try {
    const prepared = db.prepare(statement)
    return (prepared.reader ? prepared.all(...params) : (prepared.run(...params), [])) as T[]
  } finally {
    db.close()
  }
}

t.test('a database from before migration 300: records written before a rename take the owner\'s current name, once', async (t) => {
  const dataDir = tempDir()
  let platform = await startPlatform({ dataDir })
  const names = ['Alicia', 'bob_now']
  const ids: string[] = []
  for (const username of names) {
    const c = new Client(platform.url)
    const res = await c.post('/api/auth/register', { username, password: 'correct horse' })
    ids.push(((await res.json()) as { user: { id: string } }).user.id)
    t.equal((await c.post('/api/leaderboards/submit', { leaderboardId: BOARD, score: 100 + ids.length })).status, 200)
  }
  await platform.stop()
  // What an older version left: its renames kept the old name on the records (alicia -> Alicia is a
  // rename too), and migration 300 had not run.
  sql(dataDir, 'UPDATE leaderboard_records SET username = ? WHERE owner_id = ?', 'alicia', ids[0])
  sql(dataDir, 'UPDATE leaderboard_records SET username = ? WHERE owner_id = ?', 'bob_then', ids[1])
  sql(dataDir, 'DELETE FROM schema_migrations WHERE version = 300')

  platform = await startPlatform({ dataDir })
  t.teardown(() => platform.stop())
  const page = (await (await new Client(platform.url).get(`/api/leaderboards/${BOARD}`)).json()) as { records: { owner_id: string; username: string }[] }
  t.same(page.records.map((r) => [r.owner_id, r.username]), [[ids[1], 'bob_now'], [ids[0], 'Alicia']], 'served under the current names')
  await platform.stop()
  t.same(sql(dataDir, 'SELECT owner_id, username FROM leaderboard_records ORDER BY username'), [{ owner_id: ids[0], username: 'Alicia' }, { owner_id: ids[1], username: 'bob_now' }], 'stored so')
  t.same(sql(dataDir, 'SELECT count(*) AS n FROM schema_migrations WHERE version = 300'), [{ n: 1 }], 'recorded once')
  platform = await startPlatform({ dataDir })
})

t.test('a database from before 2026-11-21 loses its score index (migration 203); a newer one never had it', async (t) => {
  const dataDir = tempDir()
  let platform = await startPlatform({ dataDir })
  const c = new Client(platform.url)
  await c.post('/api/auth/register', { username: 'indexed', password: 'correct horse' })
  t.equal((await c.post('/api/leaderboards/submit', { leaderboardId: BOARD, score: 7 })).status, 200)
  await platform.stop()
  const indexes = (): string[] => sql<{ name: string }>(dataDir, "SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'leaderboard_records' AND sql IS NOT NULL ORDER BY name").map((r) => r.name)
  t.same(indexes(), ['leaderboard_records_owner'], 'made today: no score index')
  // Migration 200 as first written, and 203 not yet run.
  sql(dataDir, 'CREATE INDEX leaderboard_records_rank ON leaderboard_records (leaderboard_id, expiry, score, subscore, owner_id, username)')
  sql(dataDir, 'DELETE FROM schema_migrations WHERE version = 203')
  platform = await startPlatform({ dataDir })
  t.teardown(() => platform.stop())
  t.same(indexes(), ['leaderboard_records_owner'], 'the score index is gone')
  t.same(sql(dataDir, 'SELECT name FROM schema_migrations WHERE version = 203'), [{ name: 'no score index' }], 'recorded')
  const page = (await (await new Client(platform.url).get(`/api/leaderboards/${BOARD}`)).json()) as { records: { username: string; score: number }[] }
  t.same(page.records.map((r) => [r.username, r.score]), [['indexed', 7]], 'the records as they were')
})

t.test('a database a newer version has migrated is not opened: exit 2 and one line, the platform and users alike, and the file as it was', async (t) => {
  const dataDir = tempDir()
  const platform = await startPlatform({ dataDir })
  await new Client(platform.url).post('/api/auth/register', { username: 'from_today', password: 'correct horse' })
  await platform.stop()
  t.match(await runPlatformCommand({ DATA_DIR: dataDir }, 'check'), { code: 0, stderr: '' }, 'check passes on a file of this version')
  sql(dataDir, 'INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)', 9001, 'from the future', Date.now())
  const file = path.join(dataDir, 'playfield.sqlite')
  const before = sql(dataDir, 'SELECT * FROM schema_migrations ORDER BY version')
  const line = `config: DATA_DIR: the database ${JSON.stringify(file)} has schema changes this version does not know (9001 "from the future"), made by a newer Playfield; expected a DATA_DIR of this version or an older one (run the newer version, or restore the backup taken before it)\n`
  const refused = await startPlatform({ dataDir }).then(async (started) => (await started.stop(), new Error('started')), (err: Error) => err)
  t.equal(refused.message, `process exited (2) before ready: ${line}`, 'the platform')
  const users = await runUsers({ DATA_DIR: dataDir }, 'grant', 'from_today', 'developer')
  t.same(users, { code: 2, stdout: '', stderr: line }, 'bin/platform users')
  t.same(await runPlatformCommand({ DATA_DIR: dataDir }, 'check'), { code: 2, stdout: '', stderr: line }, 'bin/platform check says so before a restart')
  t.same(sql(dataDir, 'SELECT * FROM schema_migrations ORDER BY version'), before, 'nothing applied')
  t.same(sql(dataDir, 'SELECT count(*) AS n FROM account_roles'), [{ n: 0 }], 'no role granted')
})
