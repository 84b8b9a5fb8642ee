import http from 'node:http'
import type { PlatformConfig } from '../config.js'
import { accessChangedCredential } from '../ticket.js'

/** How long the bridge gets to take a notice; it only schedules checks, so it answers at once. */
const NOTICE_TIMEOUT_MS = 2_000

/**
 * Tell the terminal bridge (TERMINAL_HOST:TERMINAL_PORT, where the platform forwards terminals to)
 * that access changed: a session ended, a role was taken back. The bridge then checks its open
 * terminals at once (each asks POST /dev/terminal/access), instead of at their next
 * TERMINAL_ACCESS_CHECK_S. Best effort: a bridge that is not running or not reachable is no error,
 * as its own checks still come; resolves whether the bridge took the notice, never rejects.
 */
export function noticeAccessChanged(config: Pick<Readonly<PlatformConfig>, 'terminalHost' | 'terminalPort'>, keys: string[]): Promise<boolean> {
  return new Promise((resolve) => {
    const req = http.request({
      host: config.terminalHost,
      port: config.terminalPort,
      path: '/access-changed',
      method: 'POST',
      agent: false,
      headers: { authorization: `Bearer ${accessChangedCredential(keys)}`, 'content-length': 0 },
    })
    // A deadline for the whole answer, not an idle time-out: `users revoke` waits for it.
    const deadline = setTimeout(() => req.destroy(), NOTICE_TIMEOUT_MS)
    req.once('close', () => {
      clearTimeout(deadline)
      resolve(false)
    })
    req.on('error', () => resolve(false))
    req.once('response', (res) => {
      res.on('error', () => resolve(false))
      res.once('end', () => resolve(res.statusCode === 202))
      res.resume()
    })
    req.end()
  })
}
