import type { LeaderboardConfig } from '../backend/backend.js'
import type { Catalogue, CatalogueLeaderboard, Game } from './catalogue.js'
import { ManifestValidator, type Manifest } from './manifest.js'
import { schemaProblems, type Problem } from './problems.js'
import { captureProblems, isObject, ruleProblems } from './rules.js'
import { configDifference, resolveLeaderboard } from './resolve.js'
import { Representation } from './serialize.js'
import { DetailCache, type DetailSource } from './details.js'
import { messageOf } from '../log.js'
import { duplicateKeys } from './duplicate-keys.js'

/** A manifest file as read from MANIFESTS_DIR, with its capture file when one exists. */
export interface ManifestFile {
  /** The name printed in problem lines, e.g. `puzzle-tower.json`. */
  file: string
  /** The id the file name implies (name without `.json`). */
  id: string
  text: string
  /**
   * SCREENSHOTS_DIR/games/<id>/latest.json when it exists: its text, or why it cannot be read. Used
   * (and a read failure reported) only when the manifest omits verifiedPlayCapture.
   */
  capture?: { file: string; text: string } | { file: string; unreadable: string }
}

/** Either a catalogue or every problem found; pure, so check and start agree line for line. */
export type BuildResult = { catalogue: Catalogue; problems: [] } | { catalogue: null; problems: Problem[] }

/** The file's value, or undefined when it is no JSON; a key named twice in one object is a problem too. */
function parseJson(text: string, file: string, problems: Problem[]): unknown {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (err) {
    problems.push({ file, path: '$', message: `is not valid JSON (${jsonProblem(err)})` })
    return undefined
  }
  for (const path of duplicateKeys(text)) problems.push({ file, path, message: 'is given more than once in its object (JSON.parse would keep the last)' })
  return value
}

/**
 * V8's words for a parse error, unless they quote the file: its "Unexpected token" form shows up to
 * 20 characters around the error, and a file that is no manifest (a copy of a secret, or a link to
 * one) would have its start in check's output and the log.
 */
function jsonProblem(err: unknown): string {
  const message = messageOf(err)
  return message.includes('"') ? 'an unexpected character; the text around it is not shown' : message
}

/** Validate one manifest and fill in its capture; null (with problems added) when invalid. */
function readGame(input: ManifestFile, problems: Problem[]): Game | null {
  const before = problems.length
  const value = parseJson(input.text, input.file, problems)
  if (value === undefined) return null
  const found = schemaProblems(ManifestValidator, value, input.file)
  if (isObject(value)) {
    // A field the schema already reported is not reported again by a rule.
    const reported = new Set(found.map((p) => p.path))
    for (const problem of ruleProblems(value as Manifest, input.file, input.id)) if (!reported.has(problem.path)) found.push(problem)
  }
  problems.push(...found)
  if (problems.length > before) return null
  const manifest = value as Manifest
  if (manifest.verifiedPlayCapture !== undefined) return manifest as Game
  let capture: unknown = null
  if (input.capture && 'unreadable' in input.capture) {
    problems.push({ file: input.capture.file, path: '$', message: `cannot be read (${input.capture.unreadable})` })
    return null
  }
  if (input.capture) {
    capture = parseJson(input.capture.text, input.capture.file, problems)
    if (capture !== undefined) problems.push(...captureProblems(capture, input.capture.file))
    if (problems.length > before) return null
  }
  return { ...manifest, verifiedPlayCapture: capture }
}

/** Build the catalogue from its files (sorted by name); `now` dates the first nextResetAt values. */
export function buildCatalogue(inputs: ManifestFile[], now: number): BuildResult {
  const problems: Problem[] = []
  const games = new Map<string, Game>()
  const boards = new Map<string, CatalogueLeaderboard & { file: string }>()
  const sources = new Map<string, DetailSource>()
  for (const input of [...inputs].sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0))) {
    const game = readGame(input, problems)
    if (game === null) continue
    // The id equals the file name (rules.ts), so ids are unique as file names in one directory are.
    games.set(game.id, game)
    const own: LeaderboardConfig[] = []
    const lb = game.leaderboards
    const ids = lb && lb.enabled !== false ? lb.ids ?? [] : []
    ids.forEach((id, i) => {
      const config = resolveLeaderboard(id, lb?.configs?.[id])
      own.push(config)
      const known = boards.get(id)
      if (known === undefined) {
        boards.set(id, { ...config, gameId: game.id, file: input.file })
        return
      }
      const diff = configDifference(known, config)
      if (diff.length > 0) {
        problems.push({
          file: input.file,
          path: `$.leaderboards.ids[${i}]`,
          message: `leaderboard "${id}" is also declared by ${known.file} with a different config (${diff.join(', ')})`,
        })
      }
    })
    sources.set(game.id, { game, boards: own })
  }
  if (problems.length > 0) return { catalogue: null, problems }
  const leaderboards = new Map([...boards].map(([id, { file: _file, ...board }]) => [id, board]))
  const details = new DetailCache(sources, now)
  return {
    problems: [],
    catalogue: {
      games,
      leaderboards,
      list: Representation.json({ success: true, games: [...games.values()] }, { best: true, eager: true }),
      detail: (id, at) => details.get(id, at),
    },
  }
}
