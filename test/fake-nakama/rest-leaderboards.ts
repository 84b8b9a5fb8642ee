import { FakeError } from './errors.js'
import { int64Of, JsonNumber, parseKeepingNumbers, positions, stringField } from './json.js'
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

/** api.proto's enum Operator, by number: NO_OVERRIDE keeps the board's own operator. */
const OPERATORS: Record<number, 'best' | 'set' | 'incr' | 'decr' | undefined> = { 0: undefined, 1: 'best', 2: 'set', 3: 'incr', 4: 'decr' }
const OPERATOR_NAMES: Record<string, number> = { NO_OVERRIDE: 0, BEST: 1, SET: 2, INCREMENT: 3, DECREMENT: 4 }

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

/**
 * ListLeaderboardRecords (GET /v2/leaderboard/{id}): the gateway parses every query parameter first;
 * then the handler checks the limit and the owner ids, and only then does the core look the board up
 * (nakama-api.md §1.7: outside 1-N the limit is a 400, whatever the board).
 */
export function listRecords(state: FakeState, call: Call, id: string): Answer {
  const rawLimit = call.query.get('limit')
  const limit = rawLimit === null ? undefined : queryInt(rawLimit, 'Int')
  const expiry = queryInt(call.query.get('expiry') ?? '0', 'Int')
  const maxLimit = state.leaderboards.maxLimit
  if (limit !== undefined && (limit < 1 || limit > maxLimit)) throw new FakeError(3, `Invalid limit - limit must be between 1 and ${maxLimit}.`)
  const owners = call.query.getAll('owner_ids').map(uuidOf)
  if (owners.some((o) => o === null)) throw new FakeError(3, 'One or more owner IDs are invalid.')
  const list = state.leaderboards.list(id, owners as string[], limit, call.query.get('cursor') ?? '', expiry, state.now())
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

/**
 * WriteLeaderboardRecord (POST /v2/leaderboard/{id}, nakama-api.md §1.6). The gateway decodes the
 * body with protojson before the handler runs, so a field of the wrong type is a 400 whatever the
 * board (the first bad field in the text, as protojson reads it); the handler then checks the
 * metadata; the core then looks the board up (404), refuses an authoritative one (403) and maps the
 * operator. An enum takes its exact name or a number (§1.0); a number outside the Operator enum's
 * 0-4 (§1.6) reaches the core, which refuses it with ErrInvalidOperator, an Internal error there.
 */
export function writeRecord(state: FakeState, call: Call, id: string): Answer {
  const body = parseKeepingNumbers(call.body)
  const at = positions.get(body)
  let score = 0n
  let subscore = 0n
  let metadataText: string | undefined
  let operator = 0
  for (const key of Object.keys(body)) {
    if (key === 'score') score = int64Of(body.score, at?.get('score'))
    else if (key === 'subscore') subscore = int64Of(body.subscore, at?.get('subscore'))
    else if (key === 'metadata') metadataText = stringField(body, 'metadata')
    else if (key === 'operator') operator = enumOf(body.operator, at?.get('operator'))
  }
  let metadata: string | undefined
  // Nakama validates only a non-empty metadata string: a JSON object (§3.2).
  if (metadataText !== undefined && metadataText !== '') {
    let parsed: unknown
    try {
      parsed = JSON.parse(metadataText)
    } catch {
      parsed = null
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new FakeError(3, 'Metadata value must be JSON, if provided.')
    metadata = jsonbText(parsed)
  }
  const board = state.leaderboards.board(id)
  if (board.authoritative) throw new FakeError(7, 'Leaderboard only allows authoritative score submissions.')
  if (!(operator in OPERATORS)) throw new FakeError(13, 'Error writing score to leaderboard.')
  const record = state.leaderboards.write(id, call.claims!.uid, call.claims!.usn, score, subscore, metadata, OPERATORS[operator], state.now())
  return { json: restRecord(record) }
}

/**
 * An enum field as protojson reads it: absent or null is 0; an exact value name; or a JSON number
 * that is an int32 (integral forms such as 3.0 too). Anything else, a boolean, another name, a
 * numeric string, a fraction, is 400 with its position.
 */
function enumOf(value: unknown, where = 'line 1:1'): number {
  if (value === undefined || value === null) return 0
  if (typeof value === 'string' && Object.hasOwn(OPERATOR_NAMES, value)) return OPERATOR_NAMES[value]!
  if (value instanceof JsonNumber) {
    let n: bigint | null
    try {
      n = int64Of(value, where)
    } catch {
      n = null
    }
    if (n !== null && n >= -(2n ** 31n) && n < 2n ** 31n) return Number(n)
  }
  const shown = value instanceof JsonNumber ? value.text : typeof value === 'string' ? JSON.stringify(value) : Array.isArray(value) ? '[' : typeof value === 'object' ? '{' : String(value)
  throw new FakeError(3, `proto: (${where}): invalid value for enum type: ${shown}`)
}
