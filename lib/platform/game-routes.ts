import type { Router, RouteContext } from '../http/router.js'
import { gameNotFound } from '../backend/refusals.js'
import type { Representation } from '../catalogue/serialize.js'
import { replyNegotiated } from '../catalogue/negotiate.js'
import type { App } from './app.js'

/**
 * Browsers and proxies may reuse an answer for a minute, then must revalidate (a 304 costs a few
 * bytes): a reload shows within a minute. A detail is never kept past its next leaderboard reset.
 */
const MAX_AGE_S = 60
const VARY = 'Origin, Accept-Encoding'
const CACHE_CONTROL = cacheControl(MAX_AGE_S)
const JSON_TYPE = 'application/json; charset=utf-8'

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
  const caching =
    rep.expiresAt === Infinity ? CACHE_CONTROL : cacheControl(Math.max(0, Math.min(MAX_AGE_S, Math.floor((rep.expiresAt - now()) / 1000))))
  replyNegotiated(req, res, rep, { type: JSON_TYPE, vary: VARY, cacheControl: caching })
}

function cacheControl(maxAge: number): string {
  return `public, max-age=${maxAge}, must-revalidate`
}
