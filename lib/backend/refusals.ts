import { HttpError, invalidField, rateLimited } from '../http/errors.js'

// The contract's refusals (CONTRACT §2-3) that more than one module answers: both backends, a
// backend and a route, or several routes. One wording each, whichever backend runs.

/** 400 for an `incr` that would carry the stored score or subscore past 2^53-1 (CONTRACT §3), naming which. */
export function overflow(field: 'score' | 'subscore'): HttpError {
  const message = `the stored ${field} would pass 2^53-1`
  return invalidField(`/${field}`, message)
}

/** 401 NO_SESSION: no session cookie, or a session that ended (expired, revoked, unreadable). */
export function noSession(): HttpError {
  return new HttpError(401, 'NO_SESSION', 'no session')
}

/** 404 for `users grant` and `revoke` naming no account. */
export function userNotFound(username: string): HttpError {
  return new HttpError(404, 'USER_NOT_FOUND', `no user "${username}"`)
}

/** 409 USERNAME_TAKEN. */
export function usernameTaken(username: string): HttpError {
  return new HttpError(409, 'USERNAME_TAKEN', `the username ${JSON.stringify(username)} is taken`)
}

/** 401 INVALID_CREDENTIALS: one answer for an unknown name and a wrong password. */
export function invalidCredentials(): HttpError {
  return new HttpError(401, 'INVALID_CREDENTIALS', 'wrong username or password')
}

/** 429 for a rename past the rename bucket (CONTRACT §3), with the wait. */
export function tooManyRenames(waitMs: number): HttpError {
  return rateLimited('too many username changes; try again later', waitMs)
}

/** An id as a message names it: quoted, cut to 128 characters (an id may be as long as a URL). */
function named(id: string): string {
  return JSON.stringify(id.length > 128 ? `${id.slice(0, 128)}…` : id)
}

/** 404 LEADERBOARD_NOT_FOUND naming the id. */
export function leaderboardNotFound(id: string): HttpError {
  return new HttpError(404, 'LEADERBOARD_NOT_FOUND', `no leaderboard ${named(id)}`)
}

/** 404 GAME_NOT_FOUND naming the id. */
export function gameNotFound(id: string): HttpError {
  return new HttpError(404, 'GAME_NOT_FOUND', `no game ${named(id)}`)
}
