import { randomUUID } from 'node:crypto'
import { check, readJson } from '../http/body.js'
import { HttpError } from '../http/errors.js'
import { json } from '../http/reply.js'
import type { Router } from '../http/router.js'
import type { App } from './app.js'
import { EmptyBody } from './schemas.js'

// Resolves relative play URLs without letting a base leak into the answer.
const PLACEHOLDER_ORIGIN = 'http://playfield.invalid'

/** `POST /api/games/{id}/launch` (spec 2.4 and 4 rule 3, CONTRACT §3). */
export function launchRoutes(router: Router, app: App): void {
  router.add('POST', '/api/games/:id/launch', async (ctx) => {
    const user = await app.auth.require(ctx)
    // Body empty or a JSON object whose keys are ignored; any other JSON is 400.
    check(EmptyBody, await readJson(ctx.req, true))
    const game = app.catalogue().games.get(ctx.params.id!)
    if (!game) throw new HttpError(404, 'GAME_NOT_FOUND', `no game "${ctx.params.id}"`)
    const sessionId = randomUUID()
    await app.backend.recordLaunch({ sessionId, gameId: game.id, userId: user.id, time: app.now() })
    const session = { id: sessionId, gameId: game.id, playUrl: withSession(game.playUrl, sessionId) }
    json(ctx.res, 200, { success: true, session }, { 'cache-control': 'no-store' })
  })
}

/**
 * The play URL with `session=<id>` in its query (replacing one already there), the rest kept:
 * `/games/x/index.html?embed=1` gives `/games/x/index.html?embed=1&session=<id>`.
 */
export function withSession(playUrl: string, sessionId: string): string {
  const url = new URL(playUrl, PLACEHOLDER_ORIGIN)
  url.searchParams.set('session', sessionId)
  return url.origin === PLACEHOLDER_ORIGIN ? url.pathname + url.search + url.hash : url.href
}
