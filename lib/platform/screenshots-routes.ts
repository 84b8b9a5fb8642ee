import { createReadStream, type Stats } from 'node:fs'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { stat } from 'node:fs/promises'
import path from 'node:path'
import type { Router } from '../http/router.js'
import { HttpError } from '../http/errors.js'
import { queryParam } from '../http/target.js'
import { noneMatchHits } from '../http/etag.js'
import { gameNotFound } from '../backend/refusals.js'
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
const SAFE_ID = /^[a-z0-9][a-z0-9_-]*$/
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
  router.add('GET', '/screenshots/games/:id/:file', async ({ req, res, params }) => {
    const { id, file } = params as { id: string; file: string }
    const found = await captureFile(root, id, file)
    if (!found) throw new HttpError(404, 'NOT_FOUND', 'no such screenshot')
    await sendFile(req, res, found.full, found.info)
  })
  router.add('GET', '/api/developer/games/:id/capture', async (ctx) => {
    await app.auth.require(ctx)
    const id = ctx.params.id!
    const asset = queryParam(ctx.url, 'asset') ?? 'metadata'
    if (asset !== 'image' && asset !== 'metadata') {
      throw new HttpError(400, 'VALIDATION_FAILED', 'asset must be "image" or "metadata"', [{ path: '/asset', message: 'must be "image" or "metadata"' }])
    }
    if (!app.catalogue().games.has(id)) throw gameNotFound(id)
    const found = await captureFile(root, id, asset === 'image' ? 'latest.png' : 'latest.json')
    if (!found) throw new HttpError(404, 'NOT_FOUND', `no capture of ${JSON.stringify(id)} yet`)
    await sendFile(ctx.req, ctx.res, found.full, found.info)
  })
}

/** The file SCREENSHOTS_DIR/games/<id>/<file>, or null when it is missing, of an unknown type, or the names could leave the directory. */
async function captureFile(root: string, id: string, file: string): Promise<{ full: string; info: Stats } | null> {
  if (!SAFE_ID.test(id) || !SAFE_FILE.test(file) || TYPES[path.extname(file).toLowerCase()] === undefined) return null
  const full = path.join(root, 'games', id, file)
  if (!full.startsWith(root + path.sep)) return null
  const info = await stat(full).catch(() => null)
  return info?.isFile() ? { full, info } : null
}

/** A file with a weak ETag (304 on If-None-Match), a minute of caching, its type, and no body for HEAD. */
async function sendFile(req: IncomingMessage, res: ServerResponse, full: string, info: Stats): Promise<void> {
  // Weak: size and mtime say "same file", not "same bytes".
  const tag = `${info.size.toString(36)}-${Math.floor(info.mtimeMs).toString(36)}`
  res.setHeader('etag', `W/"${tag}"`)
  // latest.png is replaced in place by each capture; clients revalidate after a minute.
  res.setHeader('cache-control', 'public, max-age=60, must-revalidate')
  res.setHeader('x-content-type-options', 'nosniff')
  if (noneMatchHits(req.headers['if-none-match'], new Set([tag]))) {
    res.writeHead(304).end()
    return
  }
  res.writeHead(200, { 'content-type': TYPES[path.extname(full).toLowerCase()]!, 'content-length': info.size })
  if (req.method === 'HEAD') {
    res.end()
    return
  }
  await new Promise<void>((resolve, reject) => {
    createReadStream(full).on('error', reject).on('end', resolve).pipe(res)
  })
}
