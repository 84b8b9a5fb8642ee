import path from 'node:path'
import t from 'tap'
import Database from 'better-sqlite3'
import { Client, startPlatform, tempDir } from './helpers/platform.js'

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
