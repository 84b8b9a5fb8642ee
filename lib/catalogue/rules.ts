import type { Manifest } from './manifest.js'
import { CaptureValidator } from './manifest.js'
import { jsonPath, schemaProblems, type Problem } from './problems.js'
import { cronProblem } from './schedule.js'

/** The one leaderboard id no board may have: its read, GET /api/leaderboards/submit, is the submit endpoint's path. */
const RESERVED_BOARD_ID = 'submit'

/**
 * The rules of CONTRACT §5 a schema cannot say: they relate fields to each other or to the file
 * name. `id` is the file name without `.json`. They run on every manifest object, also one with
 * schema problems (so one run reports every problem of a file): each rule looks only at fields of
 * the type it needs and is silent otherwise, since the schema reports those fields already.
 */
export function ruleProblems(m: Manifest, file: string, id: string): Problem[] {
  const problems: Problem[] = []
  const add = (path: string, message: string): void => {
    problems.push({ file, path, message })
  }
  if (typeof m.id === 'string' && m.id !== id) add('$.id', `must equal the file name without .json ("${id}")`)
  const players = isObject(m.playerCount) ? m.playerCount : undefined
  if (typeof players?.min === 'number' && typeof players.max === 'number' && players.min > players.max) {
    add('$.playerCount.min', `must be <= $.playerCount.max (${players.min} > ${players.max})`)
  }
  // Spec 2.1: the playUrl rule depends on the integration type.
  if (typeof m.playUrl === 'string') {
    if (m.integrationType === 'native-component' && typeof m.id === 'string' && m.playUrl !== `/play/${m.id}`) {
      add('$.playUrl', `must be "/play/${m.id}" for a native-component game`)
    }
    if (m.integrationType === 'iframe-themeable' && !hasEmbedQuery(m.playUrl)) {
      add('$.playUrl', 'must carry the query embed=1 for an iframe-themeable game')
    }
  }
  if (typeof m.lastUpdated === 'string' && isImpossibleTime(m.lastUpdated)) add('$.lastUpdated', 'is not a real date and time')
  if (isObject(m.matchmaking) && m.matchmaking.enabled === false && m.matchmaking.reason === undefined) {
    add('$.matchmaking.reason', 'is required when matchmaking.enabled is false')
  }
  if (m.verifiedPlayCapture !== undefined && m.verifiedPlayCapture !== null) {
    problems.push(...captureProblems(m.verifiedPlayCapture, file, '$.verifiedPlayCapture'))
  }
  const characters: unknown[] = Array.isArray(m.characters) ? m.characters : []
  const characterIds = characters.map((c) => (isObject(c) && typeof c.id === 'string' ? c.id : undefined))
  duplicates(characterIds, (i, value) => add(`$.characters[${i}].id`, `duplicate id "${value}"`))
  if (isObject(m.leaderboards)) leaderboardProblems(m, add)
  return problems
}

/** A JSON object (not null, not an array). */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function hasEmbedQuery(url: string): boolean {
  // The query ends at the fragment: `/x.html#?embed=1` has none.
  const beforeFragment = url.split('#')[0]!
  const q = beforeFragment.indexOf('?')
  if (q < 0) return false
  return new URLSearchParams(beforeFragment.slice(q + 1)).getAll('embed').includes('1')
}

/** Report each repeated string; entries that are not strings (a schema problem already) are skipped. */
function duplicates(values: (string | undefined)[], report: (index: number, value: string) => void): void {
  const seen = new Set<string>()
  values.forEach((value, i) => {
    if (value === undefined) return
    if (seen.has(value)) report(i, value)
    seen.add(value)
  })
}

function leaderboardProblems(m: Manifest, add: (path: string, message: string) => void): void {
  const lb = m.leaderboards
  if (lb === undefined) return
  if (lb.enabled === false) {
    // Spec 2.3: "when false, no other field is present".
    for (const key of ['default', 'ids', 'configs'] as const) {
      if (lb[key] !== undefined) add(`$.leaderboards.${key}`, 'must be absent when leaderboards.enabled is false')
    }
    return
  }
  if (lb.ids === undefined) add('$.leaderboards.ids', 'is required unless leaderboards.enabled is false')
  if (lb.default === undefined) add('$.leaderboards.default', 'is required unless leaderboards.enabled is false')
  const idList: unknown[] = Array.isArray(lb.ids) ? lb.ids : []
  const ids = idList.map((v) => (typeof v === 'string' ? v : undefined))
  duplicates(ids, (i, value) => add(`$.leaderboards.ids[${i}]`, `duplicate leaderboard id ${JSON.stringify(value)}`))
  ids.forEach((id, i) => id === RESERVED_BOARD_ID && add(`$.leaderboards.ids[${i}]`, `"${RESERVED_BOARD_ID}" is reserved: /api/leaderboards/submit is where scores are sent`))
  const idsKnown = Array.isArray(lb.ids)
  if (typeof lb.default === 'string' && idsKnown && !ids.includes(lb.default)) {
    add('$.leaderboards.default', `${JSON.stringify(lb.default)} is not among leaderboards.ids`)
  }
  for (const [key, config] of Object.entries(isObject(lb.configs) ? lb.configs : {})) {
    const path = jsonPath('$.leaderboards.configs', key)
    if (idsKnown && !ids.includes(key)) add(path, `${JSON.stringify(key)} is not among leaderboards.ids`)
    if (!isObject(config)) continue
    const schedule = config.resetSchedule
    if (schedule === undefined || schedule === null) continue
    const problem = typeof schedule === 'string' ? cronProblem(schedule) : 'must be a five-field cron expression or null'
    if (problem) add(`${path}.resetSchedule`, problem)
  }
}

/** A capture's problems: its schema's, and a `capturedAt` that is no real date and time. */
export function captureProblems(capture: unknown, file: string, base = '$'): Problem[] {
  const problems = schemaProblems(CaptureValidator, capture, file, base)
  const at = isObject(capture) ? capture.capturedAt : undefined
  if (typeof at === 'string' && isImpossibleTime(at)) problems.push({ file, path: `${base}.capturedAt`, message: 'is not a real date and time' })
  return problems
}

const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.\d{1,9})?(?:Z|[+-](\d{2}):(\d{2}))$/

/**
 * Whether a timestamp of the ISO 8601 shape (the schema checks the shape) names no real moment:
 * Date.parse rolls 2026-02-30 over to March and takes 24:00, so each field is checked against its
 * range, the day against its month.
 */
function isImpossibleTime(text: string): boolean {
  const m = TIMESTAMP.exec(text)
  if (!m) return false
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number]
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate()
  const offsetOk = m[7] === undefined || (Number(m[7]) < 24 && Number(m[8]) < 60)
  return !(month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth && hour < 24 && minute < 60 && second < 60 && offsetOk)
}
