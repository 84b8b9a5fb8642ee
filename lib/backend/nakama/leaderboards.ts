import { resetTimes } from '../../catalogue/schedule.js'
import { leaderboardNotFound, overflow } from '../refusals.js'
import { HttpError, invalidField } from '../../http/errors.js'
import { logLine } from '../../log.js'
import type { LeaderboardConfig, LeaderboardPart, LeaderboardRecord, Launch, RecordPage, RecordQuery, RecordWrite } from '../backend.js'
import { LaunchAnswer, PageAnswer, SyncAnswer, WriteAnswer } from './answers.js'
import type { NakamaClient } from './client.js'
import { backendUnavailable } from './errors.js'

/** How often a leaderboard sync that found Nakama unreachable is tried again. */
const SYNC_RETRY_MS = 2_000
/**
 * The most of one sync call's body: Nakama refuses a body over `socket.max_request_size_bytes`
 * (262,144 bytes by default, nakama-api.md §1.0), which a catalogue of about 1,400 boards passes.
 * A quarter of it leaves room for a server configured lower.
 */
const SYNC_BATCH_BYTES = 65_536

/**
 * Leaderboards and launches through the module's RPCs. Nakama applies the operators, the reset
 * periods (its own clock, UTC) and the ranks; `now` is not sent because Nakama's clock rules.
 */
export class NakamaLeaderboards implements LeaderboardPart {
  #retry: NodeJS.Timeout | undefined
  /** The catalogue's boards as last synced. */
  #boards: LeaderboardConfig[] = []
  /** Each board's operator as last synced: the module refuses increments past 2^53-1 with it. */
  #operators = new Map<string, LeaderboardConfig['operator']>()
  /** A sync run because Nakama lacked a declared board; callers that found the same share it. */
  #recreating: Promise<boolean> | undefined
  /** Counts syncs begun: a failed one retries only if no newer one has begun since (that one retries for itself). */
  #generation = 0
  /** Boards already reported as keeping no ranks: said once per board and process. */
  #unranked = new Set<string>()
  constructor(readonly client: NakamaClient) {}

  /**
   * Create missing boards with ranks enabled; boards whose stored settings differ are logged.
   * While Nakama is unreachable the platform still starts (and reloads) and serves its catalogue:
   * the sync is retried in the background until it goes through; a newer sync replaces it.
   */
  async syncLeaderboards(boards: LeaderboardConfig[]): Promise<void> {
    await this.#sync(boards)
  }

  /** syncLeaderboards, answering whether the sync went through (false: pending, retried). */
  async #sync(boards: LeaderboardConfig[]): Promise<boolean> {
    const generation = ++this.#generation
    clearTimeout(this.#retry)
    this.#boards = boards
    this.#operators = new Map(boards.map((b) => [b.id, b.operator]))
    // `resets`: Nakama reports a board's schedule only as its current period's bounds (the module compares).
    const now = Date.now()
    const payload = boards.map((b) => ({
      // The resolved schedule has no leading zeros (resolve.ts), which Nakama's parser misreads.
      id: b.id, operator: b.operator, sortOrder: b.sortOrder, resetSchedule: b.resetSchedule, authoritative: b.authoritative,
      resets: resetTimes(b.resetSchedule, now),
    }))
    try {
      // Each board is created or compared on its own, so a large catalogue goes in several calls.
      const created: string[] = []
      const differing: string[] = []
      // Boards whose schedule the module could not compare in the second it was asked: the next sync does.
      const unchecked: string[] = []
      for (const batch of batches(payload, SYNC_BATCH_BYTES)) {
        const out = await this.client.rpc('playfield_sync_leaderboards', { boards: batch }, SyncAnswer)
        created.push(...out.created)
        differing.push(...out.differing)
        unchecked.push(...(out.unchecked ?? []))
      }
      logLine({ event: 'nakama.leaderboards', created, differing, unchecked })
      return true
    } catch (err) {
      if (!(err instanceof HttpError && err.status === 503)) throw err
      // A reload's sync began while this one's calls went on: a retry of this one would put the old
      // catalogue's boards and operators back over the new.
      if (generation !== this.#generation) return false
      logLine({ event: 'nakama.leaderboards_pending', retryInMs: SYNC_RETRY_MS })
      this.#retry = setTimeout(() => {
        this.syncLeaderboards(boards).catch((again: unknown) => logLine({ event: 'nakama.leaderboards_failed', error: again instanceof Error ? again.message : String(again) }))
      }, SYNC_RETRY_MS).unref()
      return false
    }
  }

  /**
   * Run `call` on board `id`; when Nakama lacks the board but the catalogue declares it (deleted in
   * Nakama's console, or the start's sync still pending), create the missing boards and run it
   * once more: LEADERBOARD_NOT_FOUND is for ids no game declares (CONTRACT §3). A declared board
   * still missing after that (Nakama failing, or refusing to create it) is the backend's failure,
   * 503 BACKEND_UNAVAILABLE, never a 404 that tells a game its board does not exist.
   */
  async #onBoard<T extends object>(id: string, call: () => Promise<T>): Promise<T> {
    const missing = (out: T): boolean => 'error' in out && out.error === 'LEADERBOARD_NOT_FOUND'
    const out = await call()
    if (!missing(out) || !this.#operators.has(id)) return out
    this.#recreating ??= this.#sync(this.#boards).finally(() => (this.#recreating = undefined))
    const synced = await this.#recreating
    const again = await call()
    if (!missing(again)) return again
    // A sync that failed has said so (nakama.leaderboards_pending); one that went through has not.
    if (synced) logLine({ event: 'nakama.leaderboard_missing', leaderboardId: id, note: 'declared by the catalogue and synced, yet Nakama has no such board' })
    throw backendUnavailable()
  }

  /** An authoritative write for the user (the module runs with Nakama's nil caller). */
  async writeRecord(write: RecordWrite): Promise<LeaderboardRecord> {
    const payload = { ...write, operator: this.#operators.get(write.leaderboardId) }
    const out = await this.#onBoard(write.leaderboardId, () => this.client.rpc('playfield_write_record', payload, WriteAnswer))
    if ('record' in out) {
      if (out.record.rank === 0) this.#reportUnranked(write.leaderboardId)
      return out.record
    }
    if (out.error === 'SCORE_OVERFLOW') throw overflow(out.field)
    throw leaderboardNotFound(write.leaderboardId)
  }

  /** Listed with the HTTP key, so anonymous readers work too; the module always sends `limit`. */
  async listRecords(query: RecordQuery): Promise<RecordPage> {
    const out = await this.#onBoard(query.leaderboardId, () => this.client.rpc('playfield_list_records', query, PageAnswer, { idempotent: true }))
    if (!('error' in out)) return { records: out.records, nextCursor: out.nextCursor, ownRecord: out.ownRecord }
    if (out.error === 'LEADERBOARD_NOT_FOUND') throw leaderboardNotFound(query.leaderboardId)
    throw invalidField('/cursor', 'cursor is invalid or expired', 'invalid or expired cursor')
  }

  /**
   * A written record always has a rank on a board that keeps them. Nakama 3.23+ keeps none for a
   * board created without `enableRanks` (by hand, say), and creation never changes an existing
   * board, so its records read rank 0 until it is deleted and the platform creates it again.
   */
  #reportUnranked(leaderboardId: string): void {
    if (this.#unranked.has(leaderboardId)) return
    this.#unranked.add(leaderboardId)
    logLine({
      event: 'nakama.unranked', leaderboardId,
      fix: "the board keeps no ranks in Nakama (created without enableRanks): delete it in Nakama's console, and the platform creates it again with ranks (README: Scaling out with Nakama)",
    })
  }

  async recordLaunch(launch: Launch): Promise<void> {
    await this.client.rpc('playfield_record_launch', launch, LaunchAnswer)
  }
}

/** `items` in runs whose JSON array stays within `maxBytes` (an item larger than that alone); one run, empty, for none. */
function batches<T>(items: T[], maxBytes: number): T[][] {
  const runs: T[][] = [[]]
  let size = 2
  for (const item of items) {
    const bytes = Buffer.byteLength(JSON.stringify(item)) + 1
    if (runs.at(-1)!.length > 0 && size + bytes > maxBytes) {
      runs.push([])
      size = 2
    }
    runs.at(-1)!.push(item)
    size += bytes
  }
  return runs
}
