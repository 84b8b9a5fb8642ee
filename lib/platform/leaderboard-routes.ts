import type { Router } from '../http/router.js'
import type { App } from './app.js'

/** Routes of this module (stub until its issue lands). */
export function leaderboardRoutes(router: Router, app: App): void {
  void router
  void app
}
