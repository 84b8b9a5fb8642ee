import { createReadStream } from 'node:fs'
import { stat } from 'node:fs/promises'
import path from 'node:path'
import type { Router } from '../http/router.js'
import { HttpError } from '../http/errors.js'
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
 * GET /screenshots/games/{id}/{file}: play captures from SCREENSHOTS_DIR/games/<id>/ (spec 4 rule 6),
 * the only layout the capture tool writes. Unknown extensions are not served (no guessing types).
 */
export function screenshotsRoutes(router: Router, app: App): void {
  const root = path.resolve(app.config.screenshotsDir)
  router.add('GET', '/screenshots/games/:id/:file', async ({ req, res, params }) => {
    const { id, file } = params as { id: string; file: string }
    const type = TYPES[path.extname(file).toLowerCase()]
    if (!SAFE_ID.test(id) || !SAFE_FILE.test(file) || type === undefined) throw notFound()
    const full = path.join(root, 'games', id, file)
    if (!full.startsWith(root + path.sep)) throw notFound()
    const info = await stat(full).catch(() => null)
    if (info === null || !info.isFile()) throw notFound()
    // Weak: size and mtime say "same file", not "same bytes".
    const etag = `W/"${info.size.toString(36)}-${Math.floor(info.mtimeMs).toString(36)}"`
    res.setHeader('etag', etag)
    // latest.png is replaced in place by each capture; clients revalidate after a minute.
    res.setHeader('cache-control', 'public, max-age=60, must-revalidate')
    res.setHeader('x-content-type-options', 'nosniff')
    const inm = req.headers['if-none-match']
    if (inm !== undefined && inm.split(',').some((t) => t.trim().replace(/^W\//, '') === etag.slice(2))) {
      res.writeHead(304).end()
      return
    }
    res.writeHead(200, { 'content-type': type, 'content-length': info.size })
    if (req.method === 'HEAD') {
      res.end()
      return
    }
    await new Promise<void>((resolve, reject) => {
      createReadStream(full).on('error', reject).on('end', resolve).pipe(res)
    })
  })
}

function notFound(): HttpError {
  return new HttpError(404, 'NOT_FOUND', 'no such screenshot')
}
