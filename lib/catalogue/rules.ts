import type { Manifest } from './manifest.js'
import { CaptureValidator } from './manifest.js'
import { jsonPath, schemaProblems, type Problem } from './problems.js'
import { cronProblem } from './schedule.js'

/**
 * The rules of CONTRACT §5 a schema cannot say: they relate fields to each other or to the file
 * name. `id` is the file name without `.json`. Runs only on a manifest that passed the schema.
 */
export function ruleProblems(m: Manifest, file: string, id: string): Problem[] {
  const problems: Problem[] = []
  const add = (path: string, message: string): void => {
    problems.push({ file, path, message })
  }
  if (m.id !== id) add('$.id', `must equal the file name without .json ("${id}")`)
  if (m.playerCount.min > m.playerCount.max) {
    add('$.playerCount.min', `must be <= $.playerCount.max (${m.playerCount.min} > ${m.playerCount.max})`)
  }
  // Spec 2.1: the playUrl rule depends on the integration type.
  if (m.integrationType === 'native-component' && m.playUrl !== `/play/${m.id}`) {
    add('$.playUrl', `must be "/play/${m.id}" for a native-component game`)
  }
  if (m.integrationType === 'iframe-themeable' && !hasEmbedQuery(m.playUrl)) {
    add('$.playUrl', 'must carry the query embed=1 for an iframe-themeable game')
  }
  if (!Number.isFinite(Date.parse(m.lastUpdated))) add('$.lastUpdated', 'is not a real date and time')
  if (m.matchmaking.enabled === false && m.matchmaking.reason === undefined) {
    add('$.matchmaking.reason', 'is required when matchmaking.enabled is false')
  }
  if (m.verifiedPlayCapture !== undefined && m.verifiedPlayCapture !== null) {
    problems.push(...schemaProblems(CaptureValidator, m.verifiedPlayCapture, file, '$.verifiedPlayCapture'))
  }
  duplicates(m.characters?.map((c) => c.id) ?? [], (i, value) => add(`$.characters[${i}].id`, `duplicate id "${value}"`))
  leaderboardProblems(m, add)
  return problems
}

function hasEmbedQuery(url: string): boolean {
  const q = url.indexOf('?')
  if (q < 0) return false
  return new URLSearchParams(url.slice(q + 1).split('#')[0]).getAll('embed').includes('1')
}

function duplicates(values: string[], report: (index: number, value: string) => void): void {
  const seen = new Set<string>()
  values.forEach((value, i) => {
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
  const ids = lb.ids ?? []
  duplicates(ids, (i, value) => add(`$.leaderboards.ids[${i}]`, `duplicate leaderboard id "${value}"`))
  if (lb.default !== undefined && lb.ids !== undefined && !ids.includes(lb.default)) {
    add('$.leaderboards.default', `"${lb.default}" is not among leaderboards.ids`)
  }
  for (const [key, config] of Object.entries(lb.configs ?? {})) {
    const path = jsonPath('$.leaderboards.configs', key)
    if (!ids.includes(key)) add(path, `"${key}" is not among leaderboards.ids`)
    const schedule = config.resetSchedule
    if (schedule === undefined || schedule === null) continue
    const problem = typeof schedule === 'string' ? cronProblem(schedule) : 'must be a five-field cron expression or null'
    if (problem) add(`${path}.resetSchedule`, problem)
  }
}
