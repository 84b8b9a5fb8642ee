import { USER_ID } from '../config.js'
import type { RouteContext } from '../http/router.js'
import type { App, SessionUser } from './app.js'
import type { SessionState } from './seal.js'

/** Roles that open the developer gate (spec terminal 5.1). */
const DEV_ROLES = new Set(['developer', 'admin'])

/** The gate's answer: the admitted user, or why not (401 without a session, 403 without admission). */
type GateResult =
  | { admitted: true; user: SessionUser; session: SessionState }
  | { admitted: false; status: 401 | 403; reason: string }

/** Whether a user is admitted, their session aside: the account's current name, or the reason not. */
type Admission = { admitted: true; user: SessionUser } | { admitted: false; reason: string }

/**
 * The developer gate (CONTRACT §3): signed in, and a `developer` or `admin` role read fresh from
 * the backend at each check (so a grant works at once), or named by DEV_ACCESS_USERS, or
 * DEV_ACCESS_ALL=true. DEV_ACCESS_USERS matches ids exactly and usernames the way the backend
 * keeps them unique: ignoring case on the embedded backend, exactly on Nakama, where `ALICE` is
 * another account than a listed `alice` and anyone may register it.
 */
export async function checkDevGate(app: App, ctx: RouteContext): Promise<GateResult> {
  const session = await app.auth.optional(ctx)
  if (!session) return { admitted: false, status: 401, reason: 'Sign in first: the developer terminal needs a session.' }
  const admission = await admitUser(app, { id: session.uid, username: session.usn })
  return admission.admitted ? { ...admission, session } : { admitted: false, status: 403, reason: admission.reason }
}

/**
 * The gate's role and DEV_ACCESS_ check for a signed-in `user` (the name is the session's, used
 * when the account is gone): at each ticket, and again while a terminal is open (POST /dev/terminal/access).
 */
export async function admitUser(app: App, user: SessionUser): Promise<Admission> {
  if (app.config.devAccessAll) return { admitted: true, user }
  const account = await app.backend.getAccount(user.id)
  // The account's name now: a session remembers the name of its sign-in, which another session
  // may have changed since (and someone else may hold by now).
  const current = account ? { id: user.id, username: account.username } : user
  if (app.config.devAccessUsers.includes(user.id) || namedByDevAccess(app, current.username)) return { admitted: true, user: current }
  if (account?.roles.some((role) => DEV_ROLES.has(role))) return { admitted: true, user: current }
  return {
    admitted: false,
    reason: `The account "${current.username}" has neither the developer nor the admin role, and DEV_ACCESS_USERS does not name it. An administrator can run: bin/platform users grant ${current.username} developer`,
  }
}

/** Whether two usernames name one account: ignoring case on the embedded backend, exactly on Nakama (the way each keeps names unique). */
export function sameUsername(app: App, a: string, b: string): boolean {
  return app.backend.kind === 'nakama' ? a === b : a.toLowerCase() === b.toLowerCase()
}

/** An entry of DEV_ACCESS_USERS that is a user id, not a name. */
const LISTED_ID = new RegExp(`^${USER_ID}$`)

/**
 * Whether DEV_ACCESS_USERS lists this username: among its names only. A listed id is no name, so
 * an account whose name is spelled as another's id (a name no rule of the platform allows, but
 * Nakama itself takes names up to 128 characters) is not admitted by it.
 */
export function namedByDevAccess(app: App, username: string): boolean {
  return app.config.devAccessUsers.some((entry) => !LISTED_ID.test(entry) && sameUsername(app, entry, username))
}
