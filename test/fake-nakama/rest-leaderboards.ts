import { FakeError } from './errors.js'
import { int64Of, parseKeepingNumbers, positions } from './json.js'
import { jsonbText, type RecordList, type StoredRecord } from './leaderboards.js'
import type { Answer, Call } from './api.js'
import type { FakeState } from './state.js'

// The REST leaderboard calls (nakama-api.md §1.6, §1.7), with Bearer auth already checked.

/** A query parameter of an integer field, as grpc-gateway parses it (strconv). */
function queryInt(value: string, type: string): number {
  if (!/^-?[0-9]+$/.test(value)) throw new FakeError(3, `strconv.Parse${type}: parsing ${JSON.stringify(value)}: invalid syntax`)
  return Number(value)
}

/** A LeaderboardRecord as the gateway writes it: int64 as strings, zero values left out. */
function restRecord(r: StoredRecord & { rank: number }) {
  const out: Record<string, unknown> = { leaderboard_id: r.leaderboardId, owner_id: r.ownerId }
  if (r.username) out.username = r.username
  if (r.score) out.score = r.score.toString()
  if (r.subscore) out.subscore = r.subscore.toString()
  out.num_score = r.numScore
  out.metadata = r.metadata
  out.create_time = new Date(r.createTime * 1000).toISOString().replace('.000Z', 'Z')
  out.update_time = new Date(r.updateTime * 1000).toISOString().replace('.000Z', 'Z')
  if (r.expiry) out.expiry_time = new Date(r.expiry * 1000).toISOString().replace('.000Z', 'Z')
  if (r.rank) out.rank = String(r.rank)
  out.max_num_score = 1000000
  return out
}

const OPERATORS: Record<string, 'best' | 'set' | 'incr' | 'decr' | undefined> = {
  0: undefined, NO_OVERRIDE: undefined, 1: 'best', BEST: 'best', 2: 'set', SET: 'set', 3: 'incr', INCREMENT: 'incr', 4: 'decr', DECREMENT: 'decr',
}

/**
 * gofrs uuid.FromString, which Nakama checks owner ids with: 32 hex digits or the canonical form,
 * in either case, optionally braced or behind `urn:uuid:`. The canonical lower-case id, or null.
 */
function uuidOf(text: string): string | null {
  let t = text.startsWith('urn:uuid:') && (text.length === 41 || text.length === 45) ? text.slice(9) : text
  if (t.startsWith('{') && t.endsWith('}') && (t.length === 34 || t.length === 38)) t = t.slice(1, -1)
  const hex = t.length === 36 && /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(t) ? t.replaceAll('-', '') : t
  if (!/^[0-9a-f]{32}$/i.test(hex)) return null
  const h = hex.toLowerCase()
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`
}

/** A LeaderboardRecordList as the gateway writes it: empty lists, cursors and a zero count left out. */
function recordList(list: RecordList) {
  const out: Record<string, unknown> = {}
  if (list.records.length) out.records = list.records.map(restRecord)
  if (list.ownerRecords.length) out.owner_records = list.ownerRecords.map(restRecord)
  if (list.nextCursor) out.next_cursor = list.nextCursor
  if (list.prevCursor) out.prev_cursor = list.prevCursor
  if (list.rankCount) out.rank_count = String(list.rankCount)
  return out
}

/** ListLeaderboardRecords (GET /v2/leaderboard/{id}). */
export function listRecords(state: FakeState, call: Call, id: string): Answer {
  const owners = call.query.getAll('owner_ids').map(uuidOf)
  if (owners.some((o) => o === null)) throw new FakeError(3, 'One or more owner IDs are invalid.')
  const rawLimit = call.query.get('limit')
  const limit = rawLimit === null ? undefined : queryInt(rawLimit, 'Int')
  const list = state.leaderboards.list(id, owners as string[], limit, call.query.get('cursor') ?? '', queryInt(call.query.get('expiry') ?? '0', 'Int'), state.now())
  return { json: recordList(list) }
}

/**
 * ListLeaderboardRecordsAroundOwner (GET /v2/leaderboard/{id}/owner/{owner_id}, nakama-api.md §1.8):
 * limit 1-100 in every version, default 1; any failure but a missing board is Internal there.
 */
export function listAroundOwner(state: FakeState, call: Call, id: string, rawOwner: string): Answer {
  const rawLimit = call.query.get('limit')
  const limit = rawLimit === null ? 1 : queryInt(rawLimit, 'Int')
  if (limit < 1 || limit > 100) throw new FakeError(3, 'Invalid limit - limit must be between 1 and 100.')
  const owner = uuidOf(rawOwner)
  if (!owner) throw new FakeError(3, 'Invalid owner ID provided.')
  const expiry = queryInt(call.query.get('expiry') ?? '0', 'Int')
  try {
    return { json: recordList(state.leaderboards.haystack(id, owner, limit, call.query.get('cursor') ?? '', expiry, state.now())) }
  } catch (e) {
    if (e instanceof FakeError && e.code !== 5) throw new FakeError(13, 'Error querying records from leaderboard.')
    throw e
  }
}

export function writeRecord(state: FakeState, call: Call, id: string): Answer {
  const body = parseKeepingNumbers(call.body)
  const at = positions.get(body)
  const score = int64Of(body.score, at?.get('score'))
  const subscore = int64Of(body.subscore, at?.get('subscore'))
  const board = state.leaderboards.board(id)
  if (board.authoritative) throw new FakeError(7, 'Leaderboard only allows authoritative score submissions.')
  let metadata: string | undefined
  // protojson: null is the default; Nakama validates only a non-empty metadata string.
  if (body.metadata !== undefined && body.metadata !== null && body.metadata !== '') {
    if (typeof body.metadata !== 'string') throw new FakeError(3, 'proto: invalid value for string type')
    let parsed: unknown
    try {
      parsed = JSON.parse(body.metadata)
    } catch {
      parsed = null
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new FakeError(3, 'Metadata value must be JSON, if provided.')
    metadata = jsonbText(parsed)
  }
  const operator = body.operator as { text?: string } | string | undefined
  const name = typeof operator === 'object' && operator !== null ? String(operator.text) : String(operator ?? 0)
  // protojson takes an enum by its exact name or any number; an unknown name is refused.
  if (typeof operator === 'string' && (/^\d+$/.test(operator) || !(operator in OPERATORS))) throw new FakeError(3, `proto: invalid value for enum type: ${JSON.stringify(operator)}`)
  const op = OPERATORS[name]
  const record = state.leaderboards.write(id, call.claims!.uid, call.claims!.usn, score, subscore, metadata, op, state.now())
  return { json: restRecord(record) }
}

