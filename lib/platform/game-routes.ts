import type { Router, RouteContext } from '../http/router.js'
import { gameNotFound } from '../backend/refusals.js'
import type { Representation } from '../catalogue/serialize.js'
import { pickVariant } from '../catalogue/negotiate.js'
import { noneMatchHits } from '../http/etag.js'
import type { App } from './app.js'

/**
 * Browsers and proxies may reuse an answer for a minute, then must revalidate (a 304 costs a few
 * bytes): a reload shows within a minute. A detail is never kept past its next leaderboard reset.
 */
const MAX_AGE_S = 60
const VARY = 'Origin, Accept-Encoding'
const CACHE_CONTROL = cacheControl(MAX_AGE_S)

/** GET /api/games and GET /api/games/{id}: pick pre-serialized bytes, never serialize per request. */
export function gameRoutes(router: Router, app: App): void {
  const clock = (): number => app.now()
  router.add('GET', '/api/games', (ctx) => {
    send(ctx, app.catalogue().list, clock)
  })
  router.add('GET', '/api/games/:id', (ctx) => {
    const id = ctx.params.id!
    const now = app.now()
    const rep = app.catalogue().detail(id, now)
    if (rep === undefined) throw gameNotFound(id)
    send(ctx, rep, () => now)
  })
}

/** `now` is asked only for a representation that expires: the list, the hottest route, reads no clock. */
function send({ req, res }: RouteContext, rep: Representation, now: () => number): void {
  const variant = pickVariant(rep, req.headers['accept-encoding'])
  const caching =
    rep.expiresAt === Infinity ? CACHE_CONTROL : cacheControl(Math.max(0, Math.min(MAX_AGE_S, Math.floor((rep.expiresAt - now()) / 1000))))
  // One flat header list for writeHead: the server's response class adds X-Request-Id to it.
  const headers = ['vary', VARY, 'etag', variant.etag, 'cache-control', caching]
  // Any of the representation's encodings stands for the same content: a tag of any is current.
  if (noneMatchHits(req.headers['if-none-match'], rep.tags)) {
    res.writeHead(304, headers).end()
    return
  }
  headers.push('content-type', 'application/json; charset=utf-8', 'content-length', variant.length)
  if (variant.encoding !== 'identity') headers.push('content-encoding', variant.encoding)
  // HEAD: node sends the headers (Content-Length included) and drops the body.
  res.writeHead(200, headers).end(variant.body)
}

function cacheControl(maxAge: number): string {
  return `public, max-age=${maxAge}, must-revalidate`
}
