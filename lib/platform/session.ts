import { parseCookie, stringifySetCookie } from 'cookie'
import type { PlatformConfig } from '../config.js'
import type { Backend, BackendSession } from '../backend/backend.js'
import { HttpError } from '../http/errors.js'
import { noSession } from '../backend/refusals.js'
import type { RouteContext } from '../http/router.js'
import { loadSecret } from '../secrets.js'
import { decodeJsonPart } from '../signed.js'
import type { Auth } from './app.js'
import { seal, sealKeys, sealReference, unseal, unsealReference, type SessionState } from './seal.js'

/** CONTRACT §2: the session credential. */
const COOKIE_NAME = 'playfield_session'
// Used when a refresh token's expiry cannot be read (a backend whose tokens are opaque).
const FALLBACK_LIFETIME_MS = 30 * 86_400_000

/** Reads and writes the sealed `playfield_session` cookie. */
interface SessionCookie {
  /** The states of the request's cookies of this name that open and have not expired, in header order. */
  read(ctx: RouteContext, now: number): SessionState[]
  /** Set the cookie to `state`; it lives until the state's `exp`. */
  write(ctx: RouteContext, state: SessionState, now: number): void
  /** Tell the browser to drop the cookie. */
  clear(ctx: RouteContext): void
  /** The keys that seal it (and terminal tickets' session references). */
  keys: Buffer[]
}

/**
 * The session cookie of this configuration, keyed by SESSION_SECRET (a comma list: the first
 * seals, all open) or the secret generated once into DATA_DIR.
 */
function createSessionCookie(config: Readonly<PlatformConfig>): SessionCookie {
  const keys = sealKeys(loadSecret(config.dataDir, 'session-secret', config.sessionSecret))
  const httpsOrigins = new Set(config.origins.filter((origin) => origin.startsWith('https://')))
  const allHttps = httpsOrigins.size === config.origins.length
  // Secure when the browser reached us over https: TLS here or at a trusted proxy, an https
  // platform origin in the request, or a deployment whose every origin is https.
  const secure = (ctx: RouteContext): boolean =>
    allHttps || ctx.proto === 'https' || httpsOrigins.has(String(ctx.req.headers.origin))
  const attributes = (ctx: RouteContext) => ({ httpOnly: true, sameSite: 'lax' as const, path: '/', secure: secure(ctx) })
  return {
    read(ctx, now) {
      const header = ctx.req.headers.cookie
      const states: SessionState[] = []
      if (!header) return states
      // A cookie of the same name that another site of the parent domain set (cookie tossing)
      // comes too, often first: each is opened, and createAuth picks among those that open.
      for (const pair of header.split(';')) {
        if (!pair.trimStart().startsWith(`${COOKIE_NAME}=`)) continue
        const value = parseCookie(pair)[COOKIE_NAME]
        const state = value ? unseal(value, keys, now) : null
        if (state) states.push(state)
      }
      return states
    },
    write(ctx, state, now) {
      const maxAge = Math.max(0, Math.floor((state.exp - now) / 1000))
      ctx.res.appendHeader('set-cookie', stringifySetCookie({ name: COOKIE_NAME, value: seal(state, keys), maxAge, ...attributes(ctx) }))
    },
    clear(ctx) {
      ctx.res.appendHeader('set-cookie', stringifySetCookie({ name: COOKIE_NAME, value: '', maxAge: 0, expires: new Date(0), ...attributes(ctx) }))
    },
    keys,
  }
}

/**
 * The cookie state for a backend session. A fresh sign-in passes no `previous`; a refresh or
 * rename keeps the first issue time. The cookie expires with the refresh token.
 */
export function stateOf(session: BackendSession, now: number, previous?: SessionState): SessionState {
  const exp = jwtExpiry(session.refreshToken) ?? previous?.exp ?? now + FALLBACK_LIFETIME_MS
  return {
    uid: session.userId,
    usn: session.username,
    rt: session.refreshToken,
    t: session.token,
    te: session.expiresAt,
    iat: previous?.iat ?? now,
    exp,
  }
}

/**
 * The state once the account is called `username`: the cookie's name and its backend token's name
 * always agree, so the token is refreshed to carry the new one (as Nakama's refresh does). When
 * the refresh answers NO_SESSION (logged out meanwhile), the old state with the new name: its
 * refresh token is revoked, so the next request refuses the cookie anyway.
 */
export async function renamedState(backend: Backend, state: SessionState, username: string, now: number): Promise<SessionState> {
  try {
    return stateOf(await backend.refresh(state.rt), now, state)
  } catch (err) {
    // Only a session ended meanwhile keeps the old token; any other failure (the backend down)
    // is the caller's error, so the cookie's name never runs ahead of its token's.
    if (!(err instanceof HttpError && err.code === 'NO_SESSION')) throw err
    return { ...state, usn: username }
  }
}

/** The `exp` claim of a JWT in Unix ms, read without checking the signature (the backend checks that). */
function jwtExpiry(token: string): number | null {
  const exp = decodeJsonPart(token.split('.')[1])?.exp
  return Number.isInteger(exp) ? (exp as number) * 1000 : null
}

/**
 * Sessions from the sealed cookie (CONTRACT §2), checked against the backend on every call. The
 * active session is the first of the request's cookies that opens and whose refresh token the
 * backend still honours, issued to the user the cookie names. Logout revokes the refresh token,
 * so an old copy of a cookie stops here, and a logged-out cookie another site put first cannot
 * hide the user's own. A cookie sealed with a leaked SESSION_SECRET (one retired but still listed
 * included) still names only the account whose token it holds.
 */
export function createAuth(config: Readonly<PlatformConfig>, backend: Backend, now: () => number): Auth {
  // Load (or generate) the sealing secret now, so a DATA_DIR problem stops the start, not a request.
  const cookie = createSessionCookie(config)
  const active = async (ctx: RouteContext): Promise<SessionState | null> => {
    for (const state of cookie.read(ctx, now())) {
      if (await backend.sessionActive(state.rt, state.uid)) return state
    }
    return null
  }
  return {
    async require(ctx) {
      const state = await active(ctx)
      if (!state) throw noSession()
      return state
    },
    optional: active,
    write: (ctx, state) => cookie.write(ctx, state, now()),
    clear: (ctx) => cookie.clear(ctx),
    reference: (state) => sealReference({ uid: state.uid, rt: state.rt }, cookie.keys),
    async referenceActive(sealed, userId) {
      const reference = unsealReference(sealed, cookie.keys)
      return reference !== null && reference.uid === userId && !(await backend.sessionEnded(reference.rt, userId))
    },
  }
}
