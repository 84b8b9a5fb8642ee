import { MIN_TOKEN_LIFE_MS, type BackendSession } from '../backend/backend.js'
import { check, readIgnoredBody, readJson } from '../http/body.js'
import { addressBlock } from '../http/client-address.js'
import { HttpError, rateLimited } from '../http/errors.js'
import { invalidCredentials, noSession } from '../backend/refusals.js'
import { connectionClosed } from '../http/pending.js'
import { json, NO_STORE } from '../http/reply.js'
import type { RouteContext, Router } from '../http/router.js'
import type { App } from './app.js'
import { LoginBody, mayBeOwnPassword, RegisterBody } from './schemas.js'
import { renamedState, stateOf } from './session.js'
import { SigninLimit } from './signin-limit.js'

/**
 * A body's password in NFC, before it is checked: "é" typed as one character or as "e" and a
 * combining accent is one password on either backend, and its 8-256 characters (CONTRACT §2) are
 * counted in the form that is hashed, so eight decomposed characters that compose to four do not
 * pass for eight.
 */
function nfcPassword(body: unknown): unknown {
  const fields = body as { password?: unknown } | null
  if (typeof body === 'object' && fields !== null && typeof fields.password === 'string') fields.password = fields.password.normalize('NFC')
  return body
}

/** Sign-in, sign-out, the session and the game-backend token (CONTRACT §2, §3; spec 2.6, 5). */
export function authRoutes(router: Router, app: App): void {
  const limit = new SigninLimit((key, now, windowMs, record) => app.backend.eventWindow(key, now, windowMs, record))

  /** Refuse a sign-in from a limited address block (429), whatever its body holds. */
  const refuseLimited = async (address: string): Promise<void> => {
    const waitMs = await limit.waitMs(address, app.now())
    if (waitMs > 0) throw rateLimited('too many failed sign-ins from this address', waitMs)
  }

  /**
   * Answer a sign-in: set the cookie, reply with the session body. Refuses first when the address
   * is limited. A login checks its password only in a place the limit gives it (SigninLimit), and
   * counts as a failure when the credentials were wrong. A new account (guest, register) has no
   * roles yet; a login's are read before the cookie is set, so a backend failure there answers
   * 503 with no cookie, never a 503 that signed the client in.
   */
  const signIn = async (ctx: RouteContext, attempt: () => Promise<BackendSession>, kind: 'new' | 'login'): Promise<void> => {
    const checksPassword = kind === 'login'
    // An IPv6 client is counted by its /64, which it can move about in at will.
    const address = addressBlock(ctx.ip)
    const place = checksPassword ? await limit.acquire(address, () => app.now()) : null
    if (place && !place.ok) throw rateLimited(place.busy ? 'too many sign-ins in progress from this address' : 'too many failed sign-ins from this address', place.waitMs)
    if (!place) await refuseLimited(address)
    let session: BackendSession
    let wrongCredentials = false
    try {
      session = await attempt()
    } catch (err) {
      wrongCredentials = err instanceof HttpError && err.code === 'INVALID_CREDENTIALS'
      throw err
    } finally {
      if (place?.ok) await place.release(wrongCredentials, app.now())
    }
    const roles = checksPassword ? ((await app.backend.getAccount(session.userId))?.roles ?? []) : []
    app.auth.write(ctx, stateOf(session, app.now()))
    json(ctx.res, 200, { success: true, user: { id: session.userId, username: session.username, roles } }, NO_STORE)
  }

  router.add('POST', '/api/auth/guest', (ctx) =>
    signIn(ctx, async () => {
      await readIgnoredBody(ctx.req)
      return app.backend.authenticateGuest()
    }, 'new'),
  )

  router.add('POST', '/api/auth/register', (ctx) =>
    signIn(ctx, async () => {
      const { username, password } = check(RegisterBody, nfcPassword(await readJson(ctx.req)))
      return app.backend.register(username, password, connectionClosed(ctx.req.socket))
    }, 'new'),
  )

  router.add('POST', '/api/auth/login', async (ctx) => {
    // A limited address is refused before its body is read, as a guest or register is. Then the
    // body: a login may wait for a place to check its password, and a client gone meanwhile must
    // not leave it waiting on a body that will never come.
    await refuseLimited(addressBlock(ctx.ip))
    const { username, password } = check(LoginBody, nfcPassword(await readJson(ctx.req)))
    await signIn(ctx, async () => {
      // Another password's second spelling: a wrong credential, counted.
      if (!mayBeOwnPassword(password)) throw invalidCredentials()
      return app.backend.login(username, password, connectionClosed(ctx.req.socket))
    }, 'login')
  })

  // Public and idempotent: without a session it still answers 200 and clears the cookie.
  router.add('POST', '/api/auth/logout', async (ctx) => {
    await readIgnoredBody(ctx.req)
    const state = await app.auth.optional(ctx)
    if (state) {
      await app.backend.logout({ token: state.t, refreshToken: state.rt })
      // The session's open terminals end now, not at the bridge's next check (README, Access).
      app.accessChanged()
    }
    app.auth.clear(ctx)
    json(ctx.res, 200, { success: true }, NO_STORE)
  })

  router.add('GET', '/api/auth/session', async (ctx) => {
    const state = await app.auth.require(ctx)
    const account = await app.backend.getAccount(state.uid)
    if (!account) {
      app.auth.clear(ctx)
      throw noSession()
    }
    // Renamed from another session: the cookie and its backend token take the current name.
    if (account.username !== state.usn) app.auth.write(ctx, await renamedState(app.backend, state, account.username, app.now()))
    json(ctx.res, 200, { success: true, user: { id: account.id, username: account.username, roles: account.roles } }, NO_STORE)
  })

  router.add('GET', '/api/auth/backend-token', async (ctx) => {
    let state = await app.auth.require(ctx)
    // Renamed from another session: a token minted before carries the old name (`usn`), which
    // someone else may hold by now. A refresh mints one with the account's current name.
    const renamed = (await app.backend.getAccount(state.uid))?.username !== state.usn
    if (renamed || state.te - app.now() < MIN_TOKEN_LIFE_MS) {
      state = stateOf(await app.backend.refresh(state.rt), app.now(), state)
      app.auth.write(ctx, state)
    }
    json(
      ctx.res,
      200,
      { success: true, token: state.t, refresh_token: state.rt, user_id: state.uid, username: state.usn, expires_at: state.te },
      NO_STORE,
    )
  })
}
