import type { PlatformConfig } from '../config.js'
import type { Backend } from '../backend/backend.js'
import { HttpError } from '../http/errors.js'
import type { Auth } from './app.js'

/** Sessions from the sealed cookie (stub until the accounts issue lands). */
export function createAuth(config: Readonly<PlatformConfig>, backend: Backend, now: () => number): Auth {
  void config, backend, now
  return {
    async require() {
      throw new HttpError(401, 'NO_SESSION', 'no session')
    },
    async optional() {
      return null
    },
  }
}
