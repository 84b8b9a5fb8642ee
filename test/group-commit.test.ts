import t from 'tap'
import path from 'node:path'
import Database from 'better-sqlite3'
import { GroupCommit } from '../lib/backend/embedded/group-commit.js'
import { createEmbeddedBackend } from '../lib/backend/embedded/index.js'
import { loadPlatformConfig } from '../lib/config.js'
import { HttpError } from '../lib/http/errors.js'
import { tempDir } from './helpers/platform.js'

/** One busy wait; three (one per write) would take 3 s, far enough apart for a loaded machine. */
const BUSY_MS = 1000

/** A real SQLite file in WAL mode, as the embedded backend opens it, with a short busy timeout. */
function open(file: string): Database.Database {
  const db = new Database(file)
  db.pragma(`busy_timeout = ${BUSY_MS}`)
  db.pragma('journal_mode = WAL')
  return db
}

t.test('a batch refused because another process holds the write lock: every write is 503 at once, not retried one by one', async (t) => {
  const file = path.join(tempDir(), 'db.sqlite')
  const db = open(file)
  db.exec('CREATE TABLE scores (owner TEXT PRIMARY KEY, score INTEGER NOT NULL)')
  let failures = 0
  const commit = new GroupCommit(db, () => failures++)
  const other = open(file)
  other.exec('BEGIN IMMEDIATE')
  const insert = db.prepare('INSERT INTO scores VALUES (?, ?)')
  const started = performance.now()
  const results = await Promise.allSettled(['a', 'b', 'c'].map((owner) => commit.submit(() => void insert.run(owner, 1))))
  const elapsed = performance.now() - started
  for (const result of results) {
    t.equal(result.status, 'rejected')
    const reason = (result as PromiseRejectedResult).reason as HttpError
    t.ok(reason instanceof HttpError)
    t.match(reason, { status: 503, code: 'BACKEND_UNAVAILABLE' })
  }
  t.ok(elapsed < 2.5 * BUSY_MS, `one busy wait for the batch (${elapsed.toFixed(0)} ms), not one per write`)
  t.equal(failures, 1, 'the owner resyncs its memory once')
  other.exec('ROLLBACK')
  await commit.submit(() => void insert.run('a', 2))
  t.same(db.prepare('SELECT owner, score FROM scores').all(), [{ owner: 'a', score: 2 }], 'nothing of the refused batch, the next write lands')
  other.close()
  db.close()
})

t.test('a batch with one bad write: the others commit, only that one is refused', async (t) => {
  const db = open(path.join(tempDir(), 'db.sqlite'))
  db.exec('CREATE TABLE scores (owner TEXT PRIMARY KEY, score INTEGER NOT NULL)')
  let failures = 0
  const commit = new GroupCommit(db, () => failures++)
  const insert = db.prepare('INSERT INTO scores VALUES (?, ?)')
  const results = await Promise.allSettled([
    commit.submit(() => void insert.run('a', 1)),
    commit.submit(() => void insert.run('a', 2)),
    commit.submit(() => void insert.run('b', 3)),
  ])
  t.same(results.map((r) => r.status), ['fulfilled', 'rejected', 'fulfilled'])
  t.match((results[1] as PromiseRejectedResult).reason, { code: 'SQLITE_CONSTRAINT_PRIMARYKEY' })
  t.equal(failures, 1)
  t.same(db.prepare('SELECT owner, score FROM scores ORDER BY owner').all(), [{ owner: 'a', score: 1 }, { owner: 'b', score: 3 }])
  db.close()
})

t.test('account writes while another process holds the write lock past busy_timeout: 503, and nothing written', async (t) => {
  const dataDir = tempDir()
  const backend = createEmbeddedBackend(loadPlatformConfig({ DATA_DIR: dataDir }))
  t.teardown(() => backend.close())
  const other = new Database(path.join(dataDir, 'playfield.sqlite'))
  other.exec('BEGIN IMMEDIATE')
  await t.rejects(backend.register('locked_out', 'correct horse battery'), { status: 503, code: 'BACKEND_UNAVAILABLE' })
  other.exec('ROLLBACK')
  other.close()
  // Had the refused register written anything, this one would be 409 USERNAME_TAKEN.
  t.match(await backend.register('locked_out', 'correct horse battery'), { username: 'locked_out' }, 'the same register once the file is free')
})

t.test('a write whose replay after a failed batch finds the file locked: 503, not a raw SQLITE_BUSY (500); the failure names the batch\'s records', async (t) => {
  const db = open(path.join(tempDir(), 'db.sqlite'))
  db.exec('CREATE TABLE scores (owner TEXT PRIMARY KEY, score INTEGER NOT NULL)')
  const failures: string[][] = []
  const commit = new GroupCommit(db, (keys) => failures.push(keys))
  const insert = db.prepare('INSERT INTO scores VALUES (?, ?)')
  let runs = 0
  // Fails the batch with a plain error; its replay meets a lock another process took in between.
  const locked = (): void => {
    runs++
    throw Object.assign(new Error(runs === 1 ? 'bad write' : 'database is locked'), { code: runs === 1 ? 'SQLITE_ERROR' : 'SQLITE_BUSY' })
  }
  const results = await Promise.allSettled([commit.submit(() => void insert.run('a', 1), 'board\0a'), commit.submit(locked, 'board\0b'), commit.submit(() => {}, null)])
  t.same(results.map((r) => r.status), ['fulfilled', 'rejected', 'fulfilled'])
  t.match((results[1] as PromiseRejectedResult).reason, { status: 503, code: 'BACKEND_UNAVAILABLE' })
  t.same(failures, [['board\0a', 'board\0b']], 'the keys of the failed batch')
  db.close()
})
