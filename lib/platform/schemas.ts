import { MAX_SCORE } from '../leaderboard.js'
import { MAX_TICKET_CHARS } from '../ticket.js'
import { Compile, Type } from '../typebox.js'

// CONTRACT §3: 3-24 characters of A-Z a-z 0-9 _ -, starting with a letter or digit. ASCII only,
// so look-alikes (Cyrillic "а", fullwidth "Ａ") and control characters never pass; the pattern
// fixes the length too, and minLength/maxLength make the error message say so.
const Username = Type.String({ minLength: 3, maxLength: 24, pattern: '^[A-Za-z0-9][A-Za-z0-9_-]{2,23}$', description: '3-24 of A-Z a-z 0-9 _ -, starting with a letter or digit' })

/**
 * What a password may hold: no lone UTF-16 surrogates (they are not characters, and UTF-8 would
 * turn them all into U+FFFD) and no control characters. NUL matters most: scrypt keys HMAC with
 * the password, and HMAC pads a short key with zero bytes, so "a" plus seven NULs would pass the
 * 8-character rule and then open with "a", and "password123\0" would open "password123".
 */
const PASSWORD_TEXT = '^[^\\u0000-\\u001f\\u007f\\uD800-\\uDFFF]*$'

// The `u` flag: without it each half of a character beyond U+FFFF (an emoji) reads as a lone
// surrogate, and a password with one would never log in.
const LONE_SURROGATE_RE = /[\uD800-\uDFFF]/u
/** HMAC-SHA256 pads a key up to its 64-byte block with NULs; a longer key is hashed instead. */
const HMAC_BLOCK_BYTES = 64

/**
 * Whether a login's password could be an account's own, not another's under a second spelling:
 * a trailing NUL within HMAC's block (its padding makes "a" plus NULs open "a") or a lone
 * surrogate (UTF-8 makes each U+FFFD) never is (login answers 401 without the hash). Other
 * control characters go to the hash: register has refused them since 2026-11-21, but an account
 * registered before then may have one (a tab), and it still signs in with its password after an
 * upgrade.
 */
export function mayBeOwnPassword(password: string): boolean {
  if (password.endsWith('\u0000') && Buffer.byteLength(password) <= HMAC_BLOCK_BYTES) return false
  return !LONE_SURROGATE_RE.test(password)
}

// CONTRACT §2: 8-256 characters, counted as code points (TypeBox counts them so).
const Password = Type.String({ minLength: 8, maxLength: 256, pattern: PASSWORD_TEXT, description: 'text without control characters' })

/** `POST /api/auth/register`: `{username, password}` under the rules above, nothing else. */
export const RegisterBody = Compile(Type.Object({ username: Username, password: Password }, { additionalProperties: false }))

/**
 * `POST /api/auth/login`: `{username, password}`, nothing else, each a non-empty string of at
 * most 256 characters. Within that, a pair no account can have (a short password, a name outside
 * today's rule) is a wrong credential, 401, counted by the sign-in limit: login does not tell
 * which part was wrong.
 */
export const LoginBody = Compile(
  Type.Object(
    { username: Type.String({ minLength: 1, maxLength: 256 }), password: Type.String({ minLength: 1, maxLength: 256 }) },
    { additionalProperties: false },
  ),
)

/** `PUT /api/user/username`: `{username}`, nothing else. */
export const UsernameBody = Compile(Type.Object({ username: Username }, { additionalProperties: false }))

// A leaderboard id is any string: one the catalogue does not declare is 404 LEADERBOARD_NOT_FOUND
// (CONTRACT §3), however it looks; the catalogue holds ids to Nakama's rule when it loads.
const LeaderboardId = Type.String()
// CONTRACT §3: integers 0..2^53-1 (Nakama stores non-negative int64; JS keeps them exact to here).
const Score = Type.Integer({ minimum: 0, maximum: MAX_SCORE })

/** `POST /api/leaderboards/submit`: metadata must be an object; its size and depth are checked by the route. */
export const SubmitBody = Compile(
  Type.Object(
    { leaderboardId: LeaderboardId, score: Score, subscore: Type.Optional(Score), metadata: Type.Optional(Type.Record(Type.String(), Type.Unknown())) },
    { additionalProperties: false },
  ),
)

/**
 * The query of `GET /api/leaderboards/{id}`: limit 1-100 and an opaque base64url cursor (padding
 * allowed: Nakama's cursors are URL-safe base64 with it); the backend checks what it encodes.
 */
export const LeaderboardQuery = Compile(
  Type.Object({
    // Decimal digits, leading zeros allowed (01 is 1); no sign, point, exponent or spaces.
    limit: Type.Optional(Type.String({ pattern: '^0*(100|[1-9][0-9]?)$', description: 'an integer from 1 to 100' })),
    cursor: Type.Optional(Type.String({ maxLength: 1024, pattern: '^[A-Za-z0-9_-]+={0,2}$', description: 'a nextCursor as given' })),
  }),
)

/** `POST /dev/terminal/access`: the ticket an open terminal was admitted with, and the bridge's fresh challenge for the answer's proof. */
export const AccessBody = Compile(
  Type.Object(
    {
      ticket: Type.String({ minLength: 1, maxLength: MAX_TICKET_CHARS }),
      challenge: Type.String({ pattern: '^[A-Za-z0-9_-]{16,64}$', description: '16-64 base64url characters' }),
    },
    { additionalProperties: false },
  ),
)
