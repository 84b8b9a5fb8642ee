import { Compile, Type } from '../../typebox.js'
import { invalidField } from '../../http/errors.js'
import { decodeJsonPart } from '../../signed.js'
import { MAX_SCORE, type RankKey, type SortOrder } from '../../leaderboard.js'

/** Where a page ended: the leaderboard, its period and order, and the last record's rank key. */
interface CursorPosition extends RankKey {
  leaderboardId: string
  expiry: number
  sortOrder: SortOrder
}

const CursorJson = Compile(
  Type.Object(
    {
      l: Type.String({ maxLength: 128 }),
      e: Type.Integer({ minimum: 0, maximum: MAX_SCORE }),
      // Optional: a cursor issued before cursors named the order is read in the board's order now.
      d: Type.Optional(Type.Union([Type.Literal('desc'), Type.Literal('asc')])),
      s: Type.Integer({ minimum: 0, maximum: MAX_SCORE }),
      u: Type.Integer({ minimum: 0, maximum: MAX_SCORE }),
      o: Type.String({ minLength: 1, maxLength: 128 }),
    },
    { additionalProperties: false },
  ),
)

/** An opaque cursor (base64url JSON) naming the position after which the next page starts. */
export function encodeCursor(at: CursorPosition): string {
  const json = JSON.stringify({ l: at.leaderboardId, e: at.expiry, d: at.sortOrder, s: at.score, u: at.subscore, o: at.ownerId })
  return Buffer.from(json, 'utf8').toString('base64url')
}

/**
 * Read a cursor for `leaderboardId` in the period ending at `expiry`, ranked in `sortOrder`; 400
 * VALIDATION_FAILED when it is not one of ours, belongs to another leaderboard, to a period that
 * has ended (as Nakama, old cursors become invalid at a reset), or to the board's order before a
 * reload reversed it (its position would start the next page in the wrong place).
 */
export function decodeCursor(cursor: string, leaderboardId: string, expiry: number, sortOrder: SortOrder): RankKey {
  const value = decodeJsonPart(cursor)
  if (!CursorJson.Check(value)) throw invalidField('/cursor', 'cursor is not valid')
  if (value.l !== leaderboardId) throw invalidField('/cursor', 'cursor belongs to another leaderboard')
  if (value.e !== expiry) throw invalidField('/cursor', 'cursor belongs to a period that has ended')
  if (value.d !== undefined && value.d !== sortOrder) throw invalidField('/cursor', 'cursor belongs to another sort order of the leaderboard')
  return { score: value.s, subscore: value.u, ownerId: value.o }
}
