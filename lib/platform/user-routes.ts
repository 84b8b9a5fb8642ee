import { readBody } from '../http/body.js'
import { HttpError } from '../http/errors.js'
import { logLine, messageOf } from '../log.js'
import { json, NO_STORE } from '../http/reply.js'
import type { Router } from '../http/router.js'
import { usernameTaken } from '../backend/refusals.js'
import { RENAME_RULE } from '../limiter.js'
import type { App } from './app.js'
import { namedByDevAccess, sameUsername } from './dev-gate.js'
import { UsernameBody } from './schemas.js'
import { renamedState } from './session.js'

/** `PUT /api/user/username` (spec 4 rule 5, CONTRACT §3). */
export function userRoutes(router: Router, app: App): void {
  router.add('PUT', '/api/user/username', async (ctx) => {
    const state = await app.auth.require(ctx)
    const { username } = await readBody(ctx.req, UsernameBody)
    await keepListedNames(app, state.uid, username)
    // One backend step: bucket read, take, rename, bucket write; 409 or 429 leave everything as it was.
    const account = await app.backend.renameUser(state.uid, username, RENAME_RULE, app.now())
    // The rename is done: a failure to refresh the token now must not answer it as failed. The
    // cookie then keeps its old name, which the next session or token request brings up to date.
    if (account.username !== state.usn) {
      const renamed = await renamedState(app.backend, state, account.username, app.now()).catch((err: unknown) => {
        logLine({ event: 'user.rename_refresh_failed', userId: state.uid, error: messageOf(err) })
        return null
      })
      if (renamed) app.auth.write(ctx, renamed)
    }
    json(ctx.res, 200, { success: true, username: account.username }, NO_STORE)
  })
}

/**
 * A username DEV_ACCESS_USERS lists opens the developer terminal, a shell on the server: a rename
 * into it would hand that to whoever asks first, and one out of it would free the name for anyone
 * to register. While listed, such a name stays with the account that has it (a change of case
 * only, where names are unique ignoring case, is no change of name).
 */
async function keepListedNames(app: App, userId: string, username: string): Promise<void> {
  if (app.config.devAccessUsers.length === 0) return
  const current = (await app.backend.getAccount(userId))?.username ?? ''
  if (sameUsername(app, current, username)) return
  if (namedByDevAccess(app, current)) {
    throw new HttpError(403, 'FORBIDDEN', 'this username is listed in DEV_ACCESS_USERS and cannot change while it is listed')
  }
  // The same answer as for a name someone holds: it does not tell who is admitted to the terminal.
  if (namedByDevAccess(app, username)) throw usernameTaken(username)
}
