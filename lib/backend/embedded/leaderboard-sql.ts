import type Database from 'better-sqlite3'
import type { LeaderboardRecord } from '../backend.js'
import type { Scores } from '../../leaderboard.js'

/**
 * Tables of migration 200. Records are keyed by (leaderboard, expiry, owner) as Nakama keys them,
 * so every reset period keeps its own rows; expiry 0 means the board never resets. There is no
 * index on score: ranks come from the in-memory index, which sorts a period once when it fills,
 * and a second B-tree would cost every write a third of its time.
 */
export const LEADERBOARD_SQL = `
CREATE TABLE leaderboards (
  id TEXT PRIMARY KEY,
  operator TEXT NOT NULL CHECK (operator IN ('best', 'set', 'incr')),
  sort_order TEXT NOT NULL CHECK (sort_order IN ('desc', 'asc')),
  reset_schedule TEXT,
  authoritative INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE TABLE leaderboard_records (
  leaderboard_id TEXT NOT NULL REFERENCES leaderboards (id),
  expiry INTEGER NOT NULL,
  owner_id TEXT NOT NULL,
  username TEXT NOT NULL,
  score INTEGER NOT NULL CHECK (score >= 0),
  subscore INTEGER NOT NULL CHECK (subscore >= 0),
  metadata TEXT NOT NULL,
  num_score INTEGER NOT NULL,
  create_time INTEGER NOT NULL,
  update_time INTEGER NOT NULL,
  PRIMARY KEY (leaderboard_id, expiry, owner_id)
) WITHOUT ROWID;
CREATE TABLE launches (
  session_id TEXT PRIMARY KEY,
  game_id TEXT NOT NULL,
  user_id TEXT NOT NULL,
  launched_at INTEGER NOT NULL
);
`

/**
 * Migration 201: records by owner, for a rename, which changes the name on all of them. Only an
 * insert (a player's first record in a period) touches it; score writes do not.
 */
export const OWNER_INDEX_SQL = 'CREATE INDEX leaderboard_records_owner ON leaderboard_records (owner_id)'

/**
 * Migration 202: a board's generation, raised by every change to its records (a score write, a
 * rename of an owner with records on it). A process that sees another connection's commit reads
 * again only the boards whose generation moved, not every board after any commit (a role granted
 * with `bin/platform users`, a sign-in served by another process).
 */
export const GENERATION_SQL = 'ALTER TABLE leaderboards ADD COLUMN generation INTEGER NOT NULL DEFAULT 0'

/**
 * Migration 203: migration 200 as first written (before 2026-11-21) made a score index, which
 * doubles the cost of every write and serves no query (ranks come from memory). Databases made
 * then lose it; any other has none.
 */
export const NO_SCORE_INDEX_SQL = 'DROP INDEX IF EXISTS leaderboard_records_rank'

/** One record of a period as the rank index holds it; rows are read in this shape directly. */
export interface RecordEntry {
  ownerId: string
  username: string
  score: number
  subscore: number
}

/** The statements of the leaderboard store, prepared once. */
export interface Statements {
  upsertBoard: Database.Statement<[string, string, string, string | null, number, number]>
  /** A first record of the owner in the period: leaderboard, expiry, owner, username, score, subscore, metadata, now, now. */
  insertRecord: Database.Statement<[string, number, string, string, number, number, string | null, number, number]>
  /**
   * A changed record: username, score, subscore, metadata (kept when null), now, leaderboard,
   * expiry, owner, and the score and subscore the write was decided on (no row changes otherwise).
   */
  updateRecord: Database.Statement<[string, number, number, string | null, number, string, number, string, number, number]>
  /** The owner's name in every record, of every board and period (a rename): username, owner. */
  renameOwner: Database.Statement<[string, string]>
  /** Raise the generation of the boards the owner has records on (a rename); their ids and new generations. */
  bumpOwnerBoards: Database.Statement<[string], { id: string; generation: number }>
  /** Raise a board's generation (a score write); its new generation. */
  bumpBoard: Database.Statement<[string], number>
  /** A board's generation now. */
  generation: Database.Statement<[string], number>
  /** Every board's generation. */
  generations: Database.Statement<[], { id: string; generation: number }>
  insertLaunch: Database.Statement<[string, string, string, number]>
  selectPeriod: Database.Statement<[string, number]>
  /** Changes when another connection (another process) commits to the file; not for this one's own commits. */
  dataVersion: Database.Statement<[], number>
}

/** Prepare the store's statements on an opened, migrated database. */
export function prepareStatements(db: Database.Database): Statements {
  return {
    upsertBoard: db.prepare(
      `INSERT INTO leaderboards (id, operator, sort_order, reset_schedule, authoritative, updated_at) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET operator = excluded.operator, sort_order = excluded.sort_order,
         reset_schedule = excluded.reset_schedule, authoritative = excluded.authoritative, updated_at = excluded.updated_at
       WHERE operator IS NOT excluded.operator OR sort_order IS NOT excluded.sort_order
         OR reset_schedule IS NOT excluded.reset_schedule OR authoritative IS NOT excluded.authoritative`,
    ),
    // Nakama's write (nakama-api.md §3.1): metadata {} when new, replaced when supplied, else kept.
    // The store knows from its index whether the row exists, so each write is one plain statement.
    insertRecord: db.prepare(
      `INSERT INTO leaderboard_records
         (leaderboard_id, expiry, owner_id, username, score, subscore, metadata, num_score, create_time, update_time)
       VALUES (?, ?, ?, ?, ?, ?, coalesce(?, '{}'), 1, ?, ?)`,
    ),
    renameOwner: db.prepare('UPDATE leaderboard_records SET username = ? WHERE owner_id = ?'),
    bumpOwnerBoards: db.prepare(
      `UPDATE leaderboards SET generation = generation + 1
       WHERE id IN (SELECT DISTINCT leaderboard_id FROM leaderboard_records WHERE owner_id = ?) RETURNING id, generation`,
    ),
    bumpBoard: db.prepare<[string], number>('UPDATE leaderboards SET generation = generation + 1 WHERE id = ? RETURNING generation').pluck(),
    generation: db.prepare<[string], number>('SELECT generation FROM leaderboards WHERE id = ?').pluck(),
    generations: db.prepare('SELECT id, generation FROM leaderboards'),
    updateRecord: db.prepare(
      `UPDATE leaderboard_records SET username = ?, score = ?, subscore = ?, metadata = coalesce(?, metadata),
         num_score = num_score + 1, update_time = ?
       WHERE leaderboard_id = ? AND expiry = ? AND owner_id = ? AND score = ? AND subscore = ?`,
    ),
    insertLaunch: db.prepare('INSERT INTO launches (session_id, game_id, user_id, launched_at) VALUES (?, ?, ?, ?)'),
    // Aliased to the index's field names, so each row object is an entry as it is (no copy per row).
    selectPeriod: db.prepare<[string, number]>(
      'SELECT owner_id AS ownerId, username, score, subscore FROM leaderboard_records WHERE leaderboard_id = ? AND expiry = ?',
    ),
    dataVersion: db.prepare<[], number>('PRAGMA data_version').pluck(),
  }
}

/** A record another process changed after this one decided a write on it: decide it again. */
export class StaleRecord extends Error {}

/** A decided write: the record after it, and the scores it was decided on (none for a first record). */
interface DecidedWrite {
  id: string
  expiry: number
  entry: RecordEntry
  was: Scores | undefined
  metadata: string | null
  now: number
}

/**
 * Store a decided write: an UPDATE of the row only while it holds the scores decided on, or an
 * INSERT of a row that must not exist yet; StaleRecord when another process wrote it meanwhile.
 * The name is the account's as the statement runs, under the commit's write lock: a rename may
 * have come in since the decision, in this process (it renamed the entry) or in another one (only
 * the accounts table knows), and the old name may be someone else's by now.
 */
export function storeRecord(sql: Statements, w: DecidedWrite, currentName: (ownerId: string) => string | undefined): void {
  const { id, expiry, entry, was, metadata, now } = w
  entry.username = currentName(entry.ownerId) ?? entry.username
  if (was) {
    const { changes } = sql.updateRecord.run(entry.username, entry.score, entry.subscore, metadata, now, id, expiry, entry.ownerId, was.score, was.subscore)
    if (changes !== 1) throw new StaleRecord()
    return
  }
  try {
    sql.insertRecord.run(id, expiry, entry.ownerId, entry.username, entry.score, entry.subscore, metadata, now, now)
  } catch (err) {
    throw (err as { code?: unknown }).code === 'SQLITE_CONSTRAINT_PRIMARYKEY' ? new StaleRecord() : err
  }
}

/** A record as the API answers it (spec 2.5). */
export function toRecord(leaderboardId: string, entry: RecordEntry, rank: number): LeaderboardRecord {
  return { leaderboard_id: leaderboardId, owner_id: entry.ownerId, username: entry.username, score: entry.score, subscore: entry.subscore, rank }
}
