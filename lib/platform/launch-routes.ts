import { randomUUID } from 'node:crypto'
import { readIgnoredBody } from '../http/body.js'
import { gameNotFound } from '../backend/refusals.js'
import { json, NO_STORE } from '../http/reply.js'
import type { Router } from '../http/router.js'
import type { App } from './app.js'
import { floodGuard } from './flood-guard.js'

/** `POST /api/games/{id}/launch` (spec 2.4 and 4 rule 3, CONTRACT §3). */
export function launchRoutes(router: Router, app: App): void {
  // Each launch is a row in the backend: one account must not write them without end.
  const flood = floodGuard('launches')
  router.add('POST', '/api/games/:id/launch', async (ctx) => {
    const { uid: userId } = await app.auth.require(ctx)
    flood(userId, performance.now())
    // Body empty or a JSON object whose keys are ignored; any other JSON is 400.
    await readIgnoredBody(ctx.req)
    const game = app.catalogue().games.get(ctx.params.id!)
    if (!game) throw gameNotFound(ctx.params.id!)
    const sessionId = randomUUID()
    await app.backend.recordLaunch({ sessionId, gameId: game.id, userId, time: app.now() })
    const session = { id: sessionId, gameId: game.id, playUrl: withSession(game.playUrl, sessionId) }
    json(ctx.res, 200, { success: true, session }, NO_STORE)
  })
}

/**
 * The play URL with `session=<id>` added to its query, as text: everything else is kept exactly
 * as the manifest wrote it (a URL parser would re-encode the other parameters and resolve the
 * path). A `session` parameter already there is dropped, so the game reads the launch's own id:
 * `/games/x/index.html?embed=1#top` gives `/games/x/index.html?embed=1&session=<id>#top`.
 */
export function withSession(playUrl: string, sessionId: string): string {
  const hashAt = playUrl.indexOf('#')
  const base = hashAt < 0 ? playUrl : playUrl.slice(0, hashAt)
  const hash = hashAt < 0 ? '' : playUrl.slice(hashAt)
  const param = `session=${encodeURIComponent(sessionId)}`
  const q = base.indexOf('?')
  if (q < 0) return `${base}?${param}${hash}`
  const query = base
    .slice(q + 1)
    .split('&')
    .filter((part) => keyOf(part) !== 'session')
    .join('&')
  const joiner = query === '' || query.endsWith('&') ? '' : '&'
  return `${base.slice(0, q)}?${query}${joiner}${param}${hash}`
}

/** A query part's key as a form decoder reads it (`sess%69on=1` is `session`). */
function keyOf(part: string): string {
  const key = part.split('=', 1)[0]!.replaceAll('+', ' ')
  try {
    return decodeURIComponent(key)
  } catch {
    return key
  }
}
