import type { PlatformConfig } from '../config.js'
import type { Backend } from '../backend/backend.js'
import type { Catalogue } from '../catalogue/catalogue.js'
import type { RouteContext } from '../http/router.js'

/** The signed-in user of a request, from the sealed session cookie. */
export interface SessionUser {
  id: string
  username: string
}

/** Session access for route handlers (lib/platform/session.ts implements it). */
export interface Auth {
  /** The signed-in user, or 401 NO_SESSION. */
  require(ctx: RouteContext): Promise<SessionUser>
  /** The signed-in user, or null. */
  optional(ctx: RouteContext): Promise<SessionUser | null>
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
}
