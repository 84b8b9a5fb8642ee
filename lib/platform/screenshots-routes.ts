import { constants, realpathSync, type Stats } from 'node:fs'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { lstat, open, readdir, readlink, realpath, type FileHandle } from 'node:fs/promises'
import path from 'node:path'
import { pipeline } from 'node:stream/promises'
import type { Router } from '../http/router.js'
import { HttpError, invalidField } from '../http/errors.js'
import { queryParam } from '../http/target.js'
import { noneMatchHits } from '../http/etag.js'
import { gameNotFound } from '../backend/refusals.js'
import { captureDir, SAFE_ID } from '../catalogue/load.js'
import type { App } from './app.js'

const TYPES: Record<string, string> = {
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.webp': 'image/webp',
  '.gif': 'image/gif',
  '.json': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
}
// Params arrive decoded: a slash, a backslash or a leading dot (`..`) never names a file here.
const SAFE_FILE = /^[A-Za-z0-9][A-Za-z0-9._-]*$/

/**
 * Play captures from SCREENSHOTS_DIR/games/<id>/ (spec 4 rule 6), the only layout the capture
 * tool writes. Unknown extensions are not served (no guessing types).
 * - GET /screenshots/games/{id}/{file}: a static page address, public.
 * - GET /api/developer/games/{id}/capture?asset=image|metadata&v=<version>: the address catalogue
 *   entries give as `imageUrl`; under /api/ and not among CONTRACT §2's public endpoints, so it
 *   needs a session. `asset=image` is latest.png, `metadata` (or no asset) latest.json; `v` only
 *   makes each capture's address new for caches, the latest capture is served whatever it says.
 */
export function screenshotsRoutes(router: Router, app: App): void {
  const root = path.resolve(app.config.screenshotsDir)
  // DATA_DIR exists from the start on (the configuration check makes it): where it really is, once.
  const realData = realDir(app.config.dataDir)
  router.add('GET', '/screenshots/games/:id/:file', async ({ req, res, params }) => {
    const { id, file } = params as { id: string; file: string }
    const found = await captureFile(root, realData, id, file)
    if (!found) throw new HttpError(404, 'NOT_FOUND', 'no such screenshot')
    await sendFile(req, res, found)
  })
  router.add('GET', '/api/developer/games/:id/capture', async (ctx) => {
    await app.auth.require(ctx)
    const id = ctx.params.id!
    const asset = queryParam(ctx.url, 'asset') ?? 'metadata'
    if (asset !== 'image' && asset !== 'metadata') {
      throw invalidField('/asset', 'asset must be "image" or "metadata"', 'must be "image" or "metadata"')
    }
    if (!app.catalogue().games.has(id)) throw gameNotFound(id)
    const found = await captureFile(root, realData, id, asset === 'image' ? 'latest.png' : 'latest.json')
    if (!found) throw new HttpError(404, 'NOT_FOUND', `no capture of ${JSON.stringify(id)} yet`)
    await sendFile(ctx.req, ctx.res, found)
  })
}

/** A capture file, open: sendFile closes it. */
interface Capture {
  handle: FileHandle
  info: Stats
  type: string
}

/**
 * The file SCREENSHOTS_DIR/games/<id>/<file>, open, or null when it is missing, of an unknown
 * type, not a regular file, or not inside SCREENSHOTS_DIR. The names cannot leave the directory,
 * but a link can (the capture tool's account writes there: a link to DATA_DIR/secrets would serve
 * the session secret), so the file opened is checked where it really is: the path of the
 * descriptor, read from /proc, is immune to a link swapped in after a check. Opened before it is
 * read, a file a capture replaces or removes meanwhile is still served whole (a stat and then an
 * open could answer 200 and then nothing). O_NONBLOCK: a FIFO would otherwise hold the open, and a thread-pool
 * thread, until something wrote to it.
 *
 * Inside SCREENSHOTS_DIR is not enough where SCREENSHOTS_DIR holds DATA_DIR (SCREENSHOTS_DIR=/srv/pf
 * with DATA_DIR=/srv/pf/data, or the two the same): a link to DATA_DIR/secrets/session-secret or
 * to the database stays inside it, and would be served to anyone.
 * DATA_DIR's own files, the secrets and the database files at its top, are never served.
 */
async function captureFile(root: string, realData: string, id: string, file: string): Promise<Capture | null> {
  const type = TYPES[path.extname(file).toLowerCase()]
  if (!SAFE_ID.test(id) || !SAFE_FILE.test(file) || type === undefined) return null
  const full = path.join(captureDir(root, id), file)
  const handle = await open(full, constants.O_RDONLY | constants.O_NONBLOCK).catch(() => null)
  if (!handle) return null
  const [real, realRoot, info] = await Promise.all([
    // Without /proc (a container that does not mount it), the path resolved now: still no link out.
    readlink(`/proc/self/fd/${handle.fd}`).catch(() => realpath(full)).catch(() => null),
    realpath(root).catch(() => null),
    handle.stat().catch(() => null),
  ])
  if (real !== null && realRoot !== null && real.startsWith(realRoot + path.sep) && !ownDataFile(real, realData) && info?.isFile() &&
    !(info.nlink > 1 && (await linkedDataFile(info, realData)))) return { handle, info, type }
  await handle.close()
  return null
}

/**
 * Whether `info`, a file with more than one name, is also one of DATA_DIR's own files by another
 * name (a hard link, which no path check sees). Only such files pay for the look.
 */
async function linkedDataFile(info: Stats, realData: string): Promise<boolean> {
  const names = async (dir: string): Promise<string[]> => (await readdir(dir).catch(() => [])).map((name) => path.join(dir, name))
  for (const file of [...(await names(realData)), ...(await names(path.join(realData, 'secrets')))]) {
    const other = await lstat(file).catch(() => null)
    if (other?.isFile() && other.ino === info.ino && other.dev === info.dev) return true
  }
  return false
}

/** `dir` resolved through its links, or as written when it cannot be. */
function realDir(dir: string): string {
  try {
    return realpathSync(dir)
  } catch {
    return path.resolve(dir)
  }
}

/** Whether `real` is one of DATA_DIR's own files: under DATA_DIR/secrets, or at DATA_DIR's top (the database, its WAL). */
function ownDataFile(real: string, realData: string): boolean {
  return real.startsWith(path.join(realData, 'secrets') + path.sep) || path.dirname(real) === realData
}

/** A file with a weak ETag (304 on If-None-Match), a minute of caching, its type, and no body for HEAD. */
async function sendFile(req: IncomingMessage, res: ServerResponse, { handle, info, type }: Capture): Promise<void> {
  // Weak: size and mtime say "same file", not "same bytes".
  const tag = `${info.size.toString(36)}-${Math.floor(info.mtimeMs).toString(36)}`
  res.setHeader('etag', `W/"${tag}"`)
  // latest.png is replaced in place by each capture; clients revalidate after a minute.
  res.setHeader('cache-control', 'public, max-age=60, must-revalidate')
  const unchanged = noneMatchHits(req.headers['if-none-match'], new Set([tag]))
  if (unchanged || req.method === 'HEAD' || info.size === 0) {
    await handle.close()
    if (unchanged) res.writeHead(304).end()
    else res.writeHead(200, { 'content-type': type, 'content-length': info.size }).end()
    return
  }
  res.writeHead(200, { 'content-type': type, 'content-length': info.size })
  // The size in the head is the size read: a file that grows meanwhile is not sent past it.
  // pipeline closes the file also when the client leaves first; that is no error of ours.
  await pipeline(handle.createReadStream({ end: info.size - 1 }), res).catch((err: unknown) => {
    if (!res.destroyed || res.writableFinished) throw err
  })
}
