import { readBody } from '../http/body.js'
import { json } from '../http/reply.js'
import type { Router } from '../http/router.js'
import { RENAME_RULE } from '../limiter.js'
import type { App } from './app.js'
import { UsernameBody } from './schemas.js'
import { renamedState, requireSession, sessionCookie } from './session.js'

/** `PUT /api/user/username` (spec 4 rule 5, CONTRACT §3). */
export function userRoutes(router: Router, app: App): void {
  const cookie = sessionCookie(app.config)

  router.add('PUT', '/api/user/username', async (ctx) => {
    const state = await requireSession(app.config, app.backend, ctx, app.now())
    const { username } = await readBody(ctx.req, UsernameBody)
    // One backend step: bucket read, take, rename, bucket write; 409 or 429 leave everything as it was.
    const account = await app.backend.renameUser(state.uid, username, RENAME_RULE, app.now())
    if (account.username !== state.usn) cookie.write(ctx, await renamedState(app.backend, state, account.username, app.now()), app.now())
    json(ctx.res, 200, { success: true, username: account.username }, { 'cache-control': 'no-store' })
  })
}
