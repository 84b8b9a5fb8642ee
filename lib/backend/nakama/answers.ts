import { Compile, Type } from '../../typebox.js'

// The answers the platform reads from Nakama (nakama-api.md §1.1, §1.2) and from the module
// nakama/modules/playfield.js, each checked by the client before use: an answer of another shape
// is the backend failing (503), never a "no", a "not found" or a "signed out".

const Account = Type.Object({ id: Type.String(), username: Type.String(), roles: Type.Array(Type.String()) })
const BoardRecord = Type.Object({
  leaderboard_id: Type.String(), owner_id: Type.String(), username: Type.String(),
  score: Type.Number(), subscore: Type.Number(), rank: Type.Number(),
})
const error = <T extends string>(code: T) => Type.Object({ error: Type.Literal(code) })

/** An answer the platform does not read (Nakama's logout answers `{}`). */
export const AnyAnswer = Compile(Type.Unknown())
/** Nakama's Session; `created` is left out when false and unread. */
export const SessionAnswer = Compile(Type.Object({ token: Type.String(), refresh_token: Type.String() }))
/** playfield_session_revoked. */
export const RevokedAnswer = Compile(Type.Object({ revoked: Type.Boolean() }))
/** playfield_revoke_session: the revocation was stored. */
export const RevokeAnswer = Compile(Type.Object({ revoked: Type.Literal(true) }))
/** playfield_get_account: null for an account that does not exist. */
export const AccountAnswer = Compile(Type.Object({ account: Type.Union([Account, Type.Null()]) }))
/** playfield_rename. */
export const RenameAnswer = Compile(Type.Union([
  Type.Object({ account: Account }),
  error('USERNAME_TAKEN'),
  Type.Object({ error: Type.Literal('RATE_LIMITED'), waitMs: Type.Number() }),
  error('NOT_FOUND'),
]))
/** playfield_set_role. */
export const RoleAnswer = Compile(Type.Union([Type.Object({ account: Account }), error('NOT_FOUND')]))
/** playfield_list_privileged. */
export const AccountsAnswer = Compile(Type.Object({ accounts: Type.Array(Account) }))
/** playfield_event_window. */
export const TimesAnswer = Compile(Type.Object({ times: Type.Array(Type.Number()) }))
/** playfield_record_launch: the launch was stored. */
export const LaunchAnswer = Compile(Type.Object({ recorded: Type.Literal(true) }))
/** playfield_sync_leaderboards. */
export const SyncAnswer = Compile(Type.Object({
  created: Type.Array(Type.String()),
  differing: Type.Array(Type.String()),
  // A module from before this version leaves it out.
  unchecked: Type.Optional(Type.Array(Type.String())),
}))
/** playfield_write_record. */
export const WriteAnswer = Compile(Type.Union([
  Type.Object({ record: BoardRecord }),
  Type.Object({ error: Type.Literal('SCORE_OVERFLOW'), field: Type.Union([Type.Literal('score'), Type.Literal('subscore')]) }),
  error('LEADERBOARD_NOT_FOUND'),
]))
/** playfield_list_records. */
export const PageAnswer = Compile(Type.Union([
  Type.Object({ records: Type.Array(BoardRecord), nextCursor: Type.Union([Type.String(), Type.Null()]), ownRecord: Type.Union([BoardRecord, Type.Null()]) }),
  error('LEADERBOARD_NOT_FOUND'),
  error('INVALID_CURSOR'),
]))
