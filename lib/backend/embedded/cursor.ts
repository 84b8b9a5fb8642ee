import { Compile, Type } from '../../typebox.js'
import { HttpError } from '../../http/errors.js'
import { MAX_SCORE, type RankKey } from '../../leaderboard.js'

/** Where a page ended: the leaderboard, its period and the last record's rank key. */
interface CursorPosition extends RankKey {
  leaderboardId: string
  expiry: number
}

const CursorJson = Compile(
  Type.Object(
    {
      l: Type.String({ maxLength: 128 }),
      e: Type.Integer({ minimum: 0, maximum: MAX_SCORE }),
      s: Type.Integer({ minimum: 0, maximum: MAX_SCORE }),
      u: Type.Integer({ minimum: 0, maximum: MAX_SCORE }),
      o: Type.String({ minLength: 1, maxLength: 128 }),
    },
    { additionalProperties: false },
  ),
)

/** An opaque cursor (base64url JSON) naming the position after which the next page starts. */
export function encodeCursor(at: CursorPosition): string {
  const json = JSON.stringify({ l: at.leaderboardId, e: at.expiry, s: at.score, u: at.subscore, o: at.ownerId })
  return Buffer.from(json, 'utf8').toString('base64url')
}

/**
 * Read a cursor for `leaderboardId` in the period ending at `expiry`; 400 VALIDATION_FAILED when it
 * is not one of ours, belongs to another leaderboard, or to a period that has ended (as Nakama,
 * old cursors become invalid at a reset).
 */
export function decodeCursor(cursor: string, leaderboardId: string, expiry: number): RankKey {
  let value: unknown
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'))
  } catch {
    throw invalid('cursor is not valid')
  }
  if (!CursorJson.Check(value)) throw invalid('cursor is not valid')
  if (value.l !== leaderboardId) throw invalid('cursor belongs to another leaderboard')
  if (value.e !== expiry) throw invalid('cursor belongs to a period that has ended')
  return { score: value.s, subscore: value.u, ownerId: value.o }
}

function invalid(message: string): HttpError {
  return new HttpError(400, 'VALIDATION_FAILED', message, [{ path: '/cursor', message }])
}
