import type { PlatformConfig } from '../config.js'
import type { Backend } from '../backend/backend.js'
import type { Catalogue } from '../catalogue/catalogue.js'
import type { RouteContext } from '../http/router.js'
import type { SessionState } from './seal.js'

/** A signed-in user: an account's id and its current name. */
export interface SessionUser {
  id: string
  username: string
}

/** The sealed session cookie for route handlers (CONTRACT §2; lib/platform/session.ts implements it). */
export interface Auth {
  /** The request's active session (createAuth in session.ts says which), or 401 NO_SESSION. */
  require(ctx: RouteContext): Promise<SessionState>
  /** The request's active session, or null. */
  optional(ctx: RouteContext): Promise<SessionState | null>
  /** Set the cookie to `state`; it lives until the state's `exp`. */
  write(ctx: RouteContext, state: SessionState): void
  /** Tell the browser to drop the cookie. */
  clear(ctx: RouteContext): void
  /** The session sealed for a terminal ticket (its user and refresh token, unreadable to the page). */
  reference(state: SessionState): string
  /** Whether `sealed` is a reference to a session of `userId` that has not ended (Backend.sessionEnded). */
  referenceActive(sealed: string, userId: string): Promise<boolean>
}

/** Everything a route module needs, built once by buildRouter (routes.ts) at start. */
export interface App {
  readonly config: Readonly<PlatformConfig>
  readonly backend: Backend
  readonly auth: Auth
  /** The catalogue now in force (replaced on SIGHUP reload). */
  catalogue(): Catalogue
  /** Injected clock, so tests can move time. */
  now(): number
  /** TERMINAL_TICKET_SECRET's keys (from DATA_DIR when unset): tickets, and the bridge's questions and notices. */
  readonly ticketKeys: string[]
  /** Tell the bridge a session ended or access was taken back, so it checks its open terminals now (access-notice.ts); best effort. */
  accessChanged(): void
}
