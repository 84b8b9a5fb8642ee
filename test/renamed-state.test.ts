import t from 'tap'
import type { Backend } from '../lib/backend/backend.js'
import { HttpError } from '../lib/http/errors.js'
import type { SessionState } from '../lib/platform/seal.js'
import { renamedState } from '../lib/platform/session.js'

// renamedState alone: what it does with each answer of the backend's refresh. Only `refresh` is
// called, so a backend that answers it is all the function needs.
const STATE: SessionState = { uid: 'u1', usn: 'old', rt: 'refresh-token', t: 'token-with-old', te: 2_000_000, iat: 1_000, exp: 9_000_000 }
const refreshing = (refresh: () => Promise<unknown>): Backend => ({ refresh }) as unknown as Backend

t.test('a rename refreshes the token, so the cookie and its token carry the same name', async (t) => {
  const next = await renamedState(refreshing(async () => ({ userId: 'u1', username: 'new', refreshToken: 'refresh-token', token: 'token-with-new', expiresAt: 3_000_000 })), STATE, 'new', 5_000)
  t.match(next, { uid: 'u1', usn: 'new', t: 'token-with-new', te: 3_000_000, iat: 1_000 })
})

t.test('a session ended meanwhile keeps its token under the new name (the cookie is refused next anyway)', async (t) => {
  const next = await renamedState(refreshing(async () => Promise.reject(new HttpError(401, 'NO_SESSION', 'no session'))), STATE, 'new', 5_000)
  t.same(next, { ...STATE, usn: 'new' })
})

t.test('a backend that is down is the caller\'s error: the name never runs ahead of the token', async (t) => {
  const down = new HttpError(503, 'BACKEND_UNAVAILABLE', 'the game backend is unavailable; try again shortly')
  await t.rejects(renamedState(refreshing(async () => Promise.reject(down)), STATE, 'new', 5_000), down)
})
