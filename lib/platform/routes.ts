import { Router } from '../http/router.js'
import type { App } from './app.js'
import { createAuth } from './session.js'
import { gameRoutes } from './game-routes.js'
import { authRoutes } from './auth-routes.js'
import { userRoutes } from './user-routes.js'
import { launchRoutes } from './launch-routes.js'
import { leaderboardRoutes } from './leaderboard-routes.js'
import { terminalRoutes, terminalTicketKeys } from './terminal-routes.js'
import { noticeAccessChanged } from './access-notice.js'
import { screenshotsRoutes } from './screenshots-routes.js'

/** The platform's route table: every endpoint of the spec and the contract. */
export function buildRouter(deps: Omit<App, 'auth' | 'ticketKeys' | 'accessChanged'>): Router {
  // The session secret first, then the ticket secret: a DATA_DIR with a bad file of each names the session's.
  const auth = createAuth(deps.config, deps.backend, deps.now)
  const ticketKeys = terminalTicketKeys(deps.config)
  const app: App = {
    ...deps,
    auth,
    ticketKeys,
    accessChanged: () => void noticeAccessChanged(deps.config, ticketKeys),
  }
  const router = new Router()
  gameRoutes(router, app)
  authRoutes(router, app)
  userRoutes(router, app)
  launchRoutes(router, app)
  leaderboardRoutes(router, app)
  terminalRoutes(router, app)
  screenshotsRoutes(router, app)
  return router
}
