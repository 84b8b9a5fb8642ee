import { existsSync } from 'node:fs'
import path from 'node:path'
import Database from 'better-sqlite3'
import { HttpError } from '../../http/errors.js'
import { checkDirectories } from '../../config-checks.js'
import { ConfigError } from '../../config-error.js'

/** One schema step; applied once, in order of `version`, inside a transaction. */
export interface Migration {
  version: number
  name: string
  sql: string
}

/** The database file inside DATA_DIR. */
const DATABASE_FILE = 'playfield.sqlite'

/** Whether DATA_DIR holds a database yet (the first open creates it). */
export function databaseExists(dataDir: string): boolean {
  return existsSync(path.join(dataDir, DATABASE_FILE))
}

/**
 * Open (creating) `DATA_DIR/playfield.sqlite` with WAL and foreign keys on, and apply pending
 * migrations. Throws a ConfigError (one line) when DATA_DIR cannot be created or written, or its
 * database file cannot be used (not a database, a directory, another account's).
 */
export function openDatabase(dataDir: string, migrations: readonly Migration[]): Database.Database {
  checkDirectories({ dataDir })
  const file = path.join(dataDir, DATABASE_FILE)
  let db: Database.Database | undefined
  try {
    db = new Database(file)
    prepare(db, file, migrations)
    return db
  } catch (err) {
    db?.close()
    // A file that is no database, a directory, or one another account owns: one line, exit 2. A
    // lock held past the busy time-out, a full disk or an I/O error may pass: not a config error.
    const code = (err as { code?: unknown } | null)?.code
    if (typeof code !== 'string' || !UNUSABLE.test(code)) throw err
    const why = err instanceof Error && err.message !== code ? `${code}: ${err.message}` : code
    throw new ConfigError(`DATA_DIR: the database ${JSON.stringify(file)} cannot be used (${why}); expected a DATA_DIR whose ${DATABASE_FILE} is a SQLite database this user can read and write`)
  }
}

/** SQLite's codes for a database file that stays unusable until someone changes it. */
const UNUSABLE = /^SQLITE_(NOTADB|CANTOPEN|READONLY|PERM|AUTH|CORRUPT)/

/** Settings and migrations of a newly opened database. */
function prepare(db: Database.Database, file: string, migrations: readonly Migration[]): void {
  // First, so that everything below waits for another process opening the same file.
  db.pragma('busy_timeout = 5000')
  // Processes that open a new file together can get "database is locked" at once from the
  // switch to WAL, without the busy timeout: SQLite refuses rather than wait where waiting could
  // deadlock (4 processes opening one fresh file: once in 200 rounds). The first migrations meet
  // the same openers. Both are safe to repeat, so they are, for as long as the busy timeout.
  untilNotBusy(() => db.pragma('journal_mode = WAL'))
  // WAL + NORMAL: a commit is in the WAL file (the OS page cache) before it returns, so an
  // acknowledged write survives a crash of this process (SIGKILL); only a power loss can drop the
  // last commits. FULL would fsync every commit and cap writes at the disk's sync rate.
  db.pragma('synchronous = NORMAL')
  db.pragma('foreign_keys = ON')
  // A checkpoint fsyncs the database file; every 10,000 WAL pages (~40 MB) instead of SQLite's
  // 1,000 keeps those stalls off most commits. A 64 MiB page cache holds the hot B-tree pages of
  // a million-record leaderboard, so a write rarely reads a page back from the OS.
  db.pragma('wal_autocheckpoint = 10000')
  db.pragma('cache_size = -65536')
  untilNotBusy(() => migrate(db, file, migrations))
  // A write, even with every migration applied: a file this account can read but not write
  // (mode 0400) is found here, as a config error, not at the first request that writes. Any other
  // failure of it (a full disk) is no reason not to start: reads are served, writes answer 500.
  try {
    untilNotBusy(() => db.pragma(`user_version = ${Number(db.pragma('user_version', { simple: true }))}`))
  } catch (err) {
    if (UNUSABLE.test(String((err as { code?: unknown } | null)?.code))) throw err
  }
}

/** Run `step` again while it fails with SQLITE_BUSY, for up to BUSY_RETRY_MS. */
function untilNotBusy(step: () => void): void {
  const deadline = Date.now() + BUSY_RETRY_MS
  for (;;) {
    try {
      return step()
    } catch (err) {
      if (!isBusy(err) || Date.now() > deadline) throw err
      Atomics.wait(pause, 0, 0, 10 + Math.random() * 20)
    }
  }
}

/** As long as busy_timeout; the retries wait 10–30 ms each, at random, so racing openers spread out. */
const BUSY_RETRY_MS = 5_000
const pause = new Int32Array(new SharedArrayBuffer(4))

function migrate(db: Database.Database, file: string, migrations: readonly Migration[]): void {
  db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)')
  refuseNewer(db, file, migrations)
  const applied = db.prepare('SELECT 1 FROM schema_migrations WHERE version = ?').pluck()
  const record = db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)')
  for (const step of [...migrations].sort((a, b) => a.version - b.version)) {
    // Asked inside the write transaction: another process opening the same file (the platform and
    // a `users` command started together) may have applied the step since this one looked.
    db.transaction(() => {
      if (applied.get(step.version) !== undefined) return
      db.exec(step.sql)
      record.run(step.version, step.name, Date.now())
    }).immediate()
  }
}

/**
 * A file a newer version has migrated (a downgrade): its data may not mean what this version's
 * code reads it as, so it is not opened, rather than served and written wrongly. A ConfigError.
 */
function refuseNewer(db: Database.Database, file: string, migrations: readonly Migration[]): void {
  const known = new Set(migrations.map((step) => step.version))
  const newer = (db.prepare('SELECT version, name FROM schema_migrations ORDER BY version').all() as Pick<Migration, 'version' | 'name'>[]).filter((step) => !known.has(step.version))
  if (newer.length === 0) return
  const steps = newer.map((step) => `${step.version} ${JSON.stringify(step.name)}`).join(', ')
  throw new ConfigError(`DATA_DIR: the database ${JSON.stringify(file)} has schema changes this version does not know (${steps}), made by a newer Playfield; expected a DATA_DIR of this version or an older one (run the newer version, or restore the backup taken before it)`)
}

/**
 * `bin/platform check`: refuse what the start would refuse for being newer, reading only (no
 * file is made, nothing is written). A database not made yet, or made before any migration, passes.
 */
export function checkDatabaseVersion(dataDir: string, migrations: readonly Migration[]): void {
  if (!databaseExists(dataDir)) return
  const file = path.join(dataDir, DATABASE_FILE)
  const db = new Database(file, { readonly: true, fileMustExist: true })
  try {
    db.pragma('busy_timeout = 5000')
    const table = db.prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'schema_migrations'").get()
    if (table !== undefined) refuseNewer(db, file, migrations)
  } finally {
    db.close()
  }
}

/** SQLite's "database is locked": another process held the write lock past busy_timeout. */
export function isBusy(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY')
}

/** The error to answer for `err`: a locked file is the backend being unavailable (503), not a fault. */
export function unavailableIfBusy(err: unknown): unknown {
  return isBusy(err) ? new HttpError(503, 'BACKEND_UNAVAILABLE', 'the game backend is busy; try again shortly') : err
}
