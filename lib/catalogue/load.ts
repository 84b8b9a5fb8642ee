import { readdirSync, readFileSync, statSync } from 'node:fs'
import path from 'node:path'
import type { PlatformConfig } from '../config.js'
import { logLine } from '../log.js'
import type { Catalogue } from './catalogue.js'
import { buildCatalogue, type BuildResult, type ManifestFile } from './build.js'
import { formatProblem, type Problem } from './problems.js'

type Dirs = Pick<PlatformConfig, 'manifestsDir' | 'screenshotsDir'>

/** A game id that can name a directory: no slash, backslash or leading dot (`..`), whatever else the schema says of it. */
export const SAFE_ID = /^[a-z0-9][a-z0-9_-]*$/

/** Where the capture tool keeps a game's files (CONTRACT §5: SCREENSHOTS_DIR/games/<id>/latest.json). */
export function captureDir(screenshotsDir: string, id: string): string {
  return path.join(screenshotsDir, 'games', id)
}

/**
 * One manifest file and its capture. A file that cannot be read is a problem of its own, so one run
 * still reports every other file's problems (a directory named x.json, a dangling editor link). A
 * capture that cannot be read is a problem only for a manifest that omits its own (build.ts).
 */
function readManifest(dirs: Dirs, file: string, problems: Problem[]): ManifestFile | null {
  const id = file.slice(0, -'.json'.length)
  let text: string
  try {
    text = readText(path.join(dirs.manifestsDir, file))
  } catch (err) {
    problems.push({ file, path: '$', message: err instanceof TypeError ? 'is not valid UTF-8' : `cannot be read (${errorCode(err)})` })
    return null
  }
  // Only a safe id names a directory to look in (an unsafe one fails the schema anyway).
  if (!SAFE_ID.test(id)) return { file, id, text }
  const capturePath = path.join(captureDir(dirs.screenshotsDir, id), 'latest.json')
  try {
    return { file, id, text, capture: { file: capturePath, text: readText(capturePath) } }
  } catch (err) {
    if (errorCode(err) === 'ENOENT') return { file, id, text }
    return { file, id, text, capture: { file: capturePath, unreadable: err instanceof TypeError ? 'not valid UTF-8' : errorCode(err) } }
  }
}

// Fatal: a manifest is served as written, and a byte that is no UTF-8 would be served as U+FFFD.
// A leading byte order mark (Windows editors write one) is dropped, as RFC 8259 §8.1 lets a parser:
// JSON.parse refuses it, and the problem line could only call it an unexpected character.
const UTF8 = new TextDecoder('utf-8', { fatal: true })

/** The file's text; a TypeError when it is not valid UTF-8, EISDIR-like errors for what is no file. */
function readText(file: string): string {
  // A FIFO (or a device) would block the read, and the start or the reload with it.
  const stats = statSync(file)
  if (!stats.isFile()) throw Object.assign(new Error(`${file} is not a file`), { code: stats.isDirectory() ? 'EISDIR' : 'not a regular file' })
  return UTF8.decode(readFileSync(file))
}

function errorCode(err: unknown): string {
  return (err as NodeJS.ErrnoException).code ?? String(err)
}

/** Read MANIFESTS_DIR/*.json (and captures for manifests without one) and build the catalogue. */
async function loadCatalogue(dirs: Dirs, now: number): Promise<BuildResult> {
  let names: string[]
  try {
    // Synchronous: a thousand small files read in a fraction of the time promises take (start-up <= 1 s).
    // Dot-files are editors' (Emacs lock links `.#x.json`), never manifests.
    names = readdirSync(dirs.manifestsDir).filter((n) => n.endsWith('.json') && !n.startsWith('.')).sort()
  } catch (err) {
    return { catalogue: null, problems: [{ file: dirs.manifestsDir, path: '$', message: `cannot read the manifests (${errorCode(err)})` }] }
  }
  const unreadable: Problem[] = []
  const inputs = names.map((file) => readManifest(dirs, file, unreadable)).filter((input) => input !== null)
  const result = buildCatalogue(inputs, now)
  return unreadable.length === 0 ? result : { catalogue: null, problems: [...unreadable, ...result.problems] }
}

/** MANIFESTS_DIR holds no valid catalogue: the start stops, and each problem is printed on a line of its own. */
export class CatalogueInvalid extends Error {
  override name = 'CatalogueInvalid'
  constructor(readonly problems: readonly string[]) {
    super(`the catalogue has ${problems.length} problem(s)`)
  }
}

/** The catalogue in force, replaced on reload only by a valid one (CONTRACT §5). */
export class CatalogueHolder {
  #current: Catalogue
  readonly #dirs: Dirs
  private constructor(current: Catalogue, dirs: Dirs) {
    this.#current = current
    this.#dirs = dirs
  }

  /** Load MANIFESTS_DIR; throws CatalogueInvalid when it holds no valid catalogue. */
  static async open(config: Readonly<PlatformConfig>): Promise<CatalogueHolder> {
    return new CatalogueHolder(await loadValidCatalogue(config), config)
  }

  /** The catalogue now in force. */
  current(): Catalogue {
    return this.#current
  }

  /** Reload (SIGHUP); keep the old catalogue and log each problem as a JSON line when the new one is invalid. */
  async reload(): Promise<boolean> {
    const result = await loadCatalogue(this.#dirs, Date.now())
    if (result.catalogue === null) {
      for (const p of result.problems) logLine({ event: 'catalogue.problem', problem: formatProblem(p) })
      logLine({ event: 'catalogue.reload_rejected', problems: result.problems.length, games: this.#current.games.size })
      return false
    }
    this.#current = result.catalogue
    logLine({ event: 'catalogue.reloaded', games: result.catalogue.games.size })
    return true
  }
}

/** `bin/platform check`: validate without starting; the summary line, or CatalogueInvalid. */
export async function runCheck(config: Readonly<PlatformConfig>): Promise<string> {
  const catalogue = await loadValidCatalogue(config)
  return `catalogue ok: ${catalogue.games.size} games, ${catalogue.leaderboards.size} leaderboards`
}

/** The catalogue MANIFESTS_DIR holds now, or CatalogueInvalid with its problems. */
async function loadValidCatalogue(dirs: Dirs): Promise<Catalogue> {
  const result = await loadCatalogue(dirs, Date.now())
  if (result.catalogue === null) throw new CatalogueInvalid(result.problems.map(formatProblem))
  return result.catalogue
}
