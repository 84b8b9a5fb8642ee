import { readFileSync } from 'node:fs'
import path from 'node:path'
import vm from 'node:vm'
import { fileURLToPath } from 'node:url'
import { parseSchedule } from './cron.js'
import { FakeError } from './errors.js'
import { jsonbText, type Board, type StoredRecord } from './leaderboards.js'
import { SYSTEM_USER, type FakeState, type StorageObject, type User } from './state.js'
import { verifyToken } from './jwt.js'

/** The module shipped in the repository, loaded as Nakama loads its js_entrypoint. */
export const MODULE_PATH = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../nakama/modules/playfield.js')

type RpcFunction = (ctx: unknown, logger: unknown, nk: unknown, payload: string) => unknown

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

type HookFunction = (ctx: unknown, logger: unknown, nk: unknown, data: unknown) => unknown

/** The loaded module: its RPCs and before-hooks by lower-cased id, and the script's global scope (for unit tests). */
export interface Runtime {
  rpcs: Map<string, RpcFunction>
  /** Before-hooks of API calls by Nakama's lower-cased name ("updateaccount"). */
  before: Map<string, HookFunction>
  scope: vm.Context
  nk: ReturnType<typeof createNk>
  logs: string[]
}

/** The keys Nakama signs session and refresh tokens with (session.encryption_key, session.refresh_encryption_key). */
export interface TokenKeys {
  encryptionKey: string
  refreshEncryptionKey: string
}

const DEFAULT_KEYS: TokenKeys = { encryptionKey: 'fake-encryption-key', refreshEncryptionKey: 'fake-refresh-encryption-key' }

/**
 * Run the module in its own realm the way Nakama's goja runtime does: one script, a top-level
 * InitModule, RPCs and hooks registered by top-level function identifiers (an inline function is
 * refused). A null source is a Nakama without any JavaScript module: no RPCs, no hooks. `keys`
 * are the token keys nk.sessionLogout verifies with.
 */
export function loadRuntime(state: FakeState, source: string | null = readFileSync(MODULE_PATH, 'utf8'), keys: TokenKeys = DEFAULT_KEYS): Runtime {
  const scope = vm.createContext({})
  // The module's clock is the server's, as in Nakama: Date.now() reads the fake's (a test may fix it).
  ;(vm.runInContext('Date', scope) as DateConstructor).now = () => state.now()
  const logs: string[] = []
  const rpcs = new Map<string, RpcFunction>()
  const before = new Map<string, HookFunction>()
  const nk = createNk(state, keys)
  if (source === null) return { rpcs, before, scope, nk, logs }
  vm.runInContext(source, scope, { filename: MODULE_PATH })
  if (typeof scope.InitModule !== 'function') throw new Error('InitModule function not found')
  const logger = {
    info: (m: string) => logs.push(`info ${m}`),
    warn: (m: string) => logs.push(`warn ${m}`),
    error: (m: string) => logs.push(`error ${m}`),
    debug: (m: string) => logs.push(`debug ${m}`),
  }
  const topLevel = (fn: unknown, what: string): void => {
    if (typeof fn !== 'function' || !fn.name || scope[fn.name] !== fn) {
      throw new Error(`js ${what} function must be a top-level named function (errInlinedFunction)`)
    }
  }
  const initializer = {
    registerRpc(id: string, fn: RpcFunction) {
      topLevel(fn, `rpc ${id}`)
      rpcs.set(id.toLowerCase(), fn)
    },
    // runtime_javascript_init.go registerHook: the key is the API name, lower-cased.
    registerBeforeUpdateAccount(fn: HookFunction) {
      topLevel(fn, 'registerBeforeUpdateAccount')
      before.set('updateaccount', fn)
    },
  }
  scope.InitModule({ env: {}, executionMode: 'run_once' }, logger, nk, initializer)
  return { rpcs, before, scope, nk, logs }
}

/**
 * A JS exception as Nakama's invokeFunction reads it: an object with a string `message` and/or an
 * integer `code` is a custom error (code defaults to 13 Internal); anything else is 13 with the
 * exception text. `error` is what RpcFuncHttp writes under "error": the jsError, i.e. its stack.
 */
function jsFailure(e: unknown): FakeError {
  if (e && typeof e === 'object' && !(e instanceof Error)) {
    const { message, code } = e as { message?: unknown; code?: unknown }
    const custom = typeof message === 'string' || (typeof code === 'number' && Number.isInteger(code))
    if (custom) {
      const text = typeof message === 'string' ? message : String(e)
      return Object.assign(new FakeError(typeof code === 'number' && Number.isInteger(code) ? code : 13, text), { error: { stackTrace: `${text} at invokeFunction (native)` } })
    }
  }
  const text = `${String((e as Error)?.message ?? e)} at invokeFunction (native)`
  return Object.assign(new FakeError(13, text), { error: { stackTrace: text } })
}

/** Run an RPC: a thrown {message, code} picks the gRPC code, anything else is 13 with a stack. */
export function invokeRpc(runtime: Runtime, id: string, payload: string, ctx: Record<string, unknown>): string {
  const fn = runtime.rpcs.get(id.toLowerCase())
  if (!fn) throw new FakeError(5, 'RPC function not found')
  const logger = { info() {}, warn: (m: string) => runtime.logs.push(`warn ${m}`), error() {}, debug() {} }
  let out: unknown
  try {
    out = fn({ env: {}, executionMode: 'rpc', userId: '', username: '', queryParams: {}, ...ctx }, logger, runtime.nk, payload)
  } catch (e) {
    throw jsFailure(e)
  }
  if (out === undefined || out === null) return ''
  // RuntimeProviderJS.Rpc takes a string and nothing else.
  if (typeof out !== 'string') throw new FakeError(13, 'Runtime function returned invalid data - only allowed one return value of type string.')
  return out
}

/**
 * RuntimeProviderJS.BeforeReq: the request goes in as protojson with lowerCamelCase names and
 * every field present (EmitUnpopulated: unset wrappers are null); a throw rejects the call with its
 * code; null/undefined means "disabled" (the API answers 404 Requested resource was not found.);
 * any other value is read back as the request. Undefined when no hook is registered.
 */
export function invokeBeforeHook(runtime: Runtime, id: string, request: Record<string, unknown>, ctx: Record<string, unknown>): unknown {
  const fn = runtime.before.get(id)
  if (!fn) return undefined
  const logger = { info() {}, warn: (m: string) => runtime.logs.push(`warn ${m}`), error() {}, debug() {} }
  let out: unknown
  try {
    out = fn({ env: {}, executionMode: 'before', queryParams: {}, headers: {}, ...ctx }, logger, runtime.nk, structuredClone(request))
  } catch (e) {
    throw jsFailure(e)
  }
  if (out === undefined || out === null) throw new FakeError(5, 'Requested resource was not found.')
  return JSON.parse(JSON.stringify(out))
}

/** getJsInt: a JS integer (goja exports it as int64); anything else is TypeError "expects number". */
function intArg(value: unknown, name: string): bigint {
  if (value === undefined || value === null) return 0n
  if (typeof value !== 'number' || !Number.isInteger(value)) throw new TypeError(`expects number: ${name}`)
  return BigInt(value)
}

// int64 values reach JS as numbers: exact to 2^53, rounded past it, as goja converts them.
function jsRecord(r: StoredRecord & { rank: number }) {
  return {
    leaderboardId: r.leaderboardId, ownerId: r.ownerId, username: r.username, score: Number(r.score), subscore: Number(r.subscore),
    numScore: r.numScore, maxNumScore: 1000000, metadata: JSON.parse(r.metadata), createTime: r.createTime,
    updateTime: r.updateTime, expiryTime: r.expiry, rank: r.rank,
  }
}

function jsUser(u: User) {
  return { userId: u.id, username: u.username, displayName: u.displayName ?? '', createTime: u.createTime, updateTime: u.updateTime }
}

function jsObject(o: StorageObject) {
  return { ...o, value: JSON.parse(o.value) }
}

const SORT: Record<string, Board['sortOrder']> = { asc: 'asc', ascending: 'asc', desc: 'desc', descending: 'desc' }
const OPERATOR: Record<string, Board['operator']> = { best: 'best', set: 'set', incr: 'incr', increment: 'incr', decr: 'decr', decrement: 'decr' }
const OPERATOR_NAME: Record<Board['operator'], string> = { best: 'best', set: 'set', incr: 'increment', decr: 'decrement' }

/** The `nk` object: the runtime functions the module calls, with the JS runtime's shapes and errors. */
function createNk(state: FakeState, keys: TokenKeys) {
  const uuid = (id: unknown, what: string) => {
    if (typeof id !== 'string' || !UUID.test(id)) throw new TypeError(`invalid ${what}: expects a valid user id`)
    return id
  }
  return {
    leaderboardCreate(id: string, authoritative = false, sortOrder = 'desc', operator = 'best', resetSchedule: string | null = null,
      metadata: Record<string, unknown> | null = {}, enableRanks = false): void {
      if (typeof id !== 'string' || id === '') throw new TypeError('expects a leaderboard ID string')
      const sort = SORT[sortOrder]
      const op = OPERATOR[operator]
      if (!sort) throw new TypeError('expects sort order to be one of: asc, ascending, desc, descending')
      if (!op) throw new TypeError('expects operator to be one of: best, set, incr, increment, decr, decrement')
      if (resetSchedule) {
        // Nakama checks the schedule with cronexpr.Parse alone: one that never fires is accepted.
        try {
          parseSchedule(resetSchedule)
        } catch {
          throw new TypeError('expects reset schedule to be a valid CRON expression')
        }
      }
      state.leaderboards.create({
        id, authoritative: Boolean(authoritative), sortOrder: sort, operator: op, resetSchedule: resetSchedule || null,
        metadata: metadata ?? {}, enableRanks: Boolean(enableRanks), createTime: Math.floor(state.now() / 1000),
      })
    },
    // leaderboardsGetId: LeaderboardsGet, then leaderboardToJsObject (runtime_javascript_nakama.go): no
    // reset schedule, only the current period's bounds, each left out when 0 (no schedule).
    leaderboardsGetId(ids: string[]) {
      return ids.flatMap((id) => {
        const b = state.leaderboards.boards.get(id)
        if (!b) return []
        const now = state.now()
        // api.Leaderboard's prev_reset and next_reset are uint32: Go's zero time wraps to 2288912640.
        const prev = state.leaderboards.lastReset(b, now) >>> 0
        const next = state.leaderboards.expiry(b, now) >>> 0
        return [{
          id: b.id, operator: OPERATOR_NAME[b.operator], sortOrder: b.sortOrder === 'asc' ? 0 : 1, metadata: b.metadata,
          createTime: b.createTime, ...(prev ? { prevReset: prev } : {}), ...(next ? { nextReset: next } : {}), authoritative: b.authoritative,
        }]
      })
    },
    leaderboardRecordWrite(id: string, ownerId: string, username?: string, score?: number, subscore?: number,
      metadata?: Record<string, unknown> | null, override?: string) {
      uuid(ownerId, 'owner id')
      const s = intArg(score, 'score')
      const ss = intArg(subscore, 'subscore')
      const op = override ? OPERATOR[override] : undefined
      if (override && !op) throw new TypeError('expects override operator to be one of: best, set, incr, decr')
      const meta = metadata === undefined || metadata === null ? undefined : jsonbText(metadata)
      // An empty name is NULL to the query (COALESCE keeps the stored one), as a missing one is.
      return jsRecord(state.leaderboards.write(id, ownerId, username || null, s, ss, meta, op, state.now()))
    },
    leaderboardRecordsList(id: string, ownerIds?: string[] | null, limit?: number, cursor?: string, overrideExpiry?: number) {
      const owners = ownerIds ?? []
      for (const o of owners) uuid(o, 'owner id')
      if (limit !== undefined && limit !== null && (limit < 1 || limit > 10000)) throw new TypeError('limit must be 1-10000')
      const list = state.leaderboards.list(id, owners, limit ?? undefined, cursor ?? '', overrideExpiry ?? 0, state.now())
      return {
        records: list.records.map(jsRecord), ownerRecords: list.ownerRecords.map(jsRecord),
        nextCursor: list.nextCursor, prevCursor: list.prevCursor, rankCount: list.rankCount,
      }
    },
    storageRead(reads: Array<{ collection: string; key: string; userId?: string }>) {
      return reads.flatMap((r) => {
        const o = state.read(r.collection, r.key, r.userId ?? SYSTEM_USER)
        return o ? [jsObject(o)] : []
      })
    },
    storageWrite(writes: Array<{ collection: string; key: string; userId?: string; value: unknown; version?: string; permissionRead?: number; permissionWrite?: number }>) {
      for (const w of writes) {
        if (w.value === null || typeof w.value !== 'object' || Array.isArray(w.value)) throw new TypeError('expects value to be an object')
      }
      const acks = state.write(writes.map((w) => ({ ...w, userId: w.userId ?? SYSTEM_USER })))
      return acks.map((o) => ({ collection: o.collection, key: o.key, userId: o.userId, version: o.version }))
    },
    storageDelete(deletes: Array<{ collection: string; key: string; userId?: string; version?: string }>) {
      state.remove(deletes.map((d) => ({ ...d, userId: d.userId ?? SYSTEM_USER })))
    },
    usersGetId(ids: string[]) {
      return ids.flatMap((id) => {
        uuid(id, 'user id')
        const u = state.users.get(id)
        return u ? [jsUser(u)] : []
      })
    },
    usersGetUsername(names: string[]) {
      return names.flatMap((n) => {
        const u = state.byUsername(n)
        return u ? [jsUser(u)] : []
      })
    },
    accountGetId(id: string) {
      uuid(id, 'user id')
      const u = state.users.get(id)
      if (!u) throw new Error('User account not found.')
      // accountToJsObject (server/runtime_javascript_nakama.go): empty fields and unset times are
      // left out; disableTime, in unix seconds, is there only for a banned account.
      return {
        user: jsUser(u), wallet: {},
        ...(u.email ? { email: u.email } : {}), ...(u.deviceId ? { devices: [{ id: u.deviceId }] } : {}),
        ...(u.customId ? { customId: u.customId } : {}), ...(u.disableTime ? { disableTime: u.disableTime } : {}),
      }
    },
    accountUpdateId(id: string, username?: string | null, displayName?: string | null) {
      uuid(id, 'user id')
      try {
        const fields: { username?: string; displayName?: string } = {}
        if (username !== undefined && username !== null) fields.username = username
        if (displayName !== undefined && displayName !== null) fields.displayName = displayName
        state.updateAccount(id, fields)
      } catch (e) {
        // core_account.go turns the unique violation into this message for every caller.
        if (e instanceof FakeError && e.code === 6) throw new Error('Username is already in use.')
        throw e instanceof FakeError ? new Error(e.message) : e
      }
    },
    // runtime_javascript_nakama.go sessionLogout: only an undefined argument is absent; anything
    // else must be a string (null throws). core_session.go SessionLogout: each token given (not
    // empty) must verify (signature, expiry) and be the user's, else the call fails and nothing
    // is invalidated; with neither, every token of the user is (RemoveAll).
    sessionLogout(userId: string, token?: unknown, refreshToken?: unknown) {
      uuid(userId, 'user id')
      const text = (value: unknown, what: string): string => {
        if (value === undefined) return ''
        if (typeof value !== 'string') throw new TypeError(`expects ${what} to be a string`)
        return value
      }
      const [session, refresh] = [text(token, 'token'), text(refreshToken, 'refresh token')]
      const nowSec = Math.floor(state.now() / 1000)
      const removed: Array<['session' | 'refresh', string]> = []
      // ErrSessionTokenInvalid / ErrRefreshTokenInvalid, wrapped as the runtime wraps them ("failed to logout: %s").
      for (const [kind, given, key, message] of [['session', session, keys.encryptionKey, 'session token invalid'], ['refresh', refresh, keys.refreshEncryptionKey, 'refresh token invalid']] as const) {
        if (given === '') continue
        const claims = verifyToken(given, key, nowSec)
        if (!claims || claims.uid !== userId) throw new Error(`failed to logout: ${message}`)
        removed.push([kind, claims.tid])
      }
      state.logOut(userId, removed)
    },
  }
}
