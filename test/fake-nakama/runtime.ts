import { readFileSync } from 'node:fs'
import path from 'node:path'
import vm from 'node:vm'
import { fileURLToPath } from 'node:url'
import { FakeError } from './errors.js'
import { jsonbText, type Board, type StoredRecord } from './leaderboards.js'
import type { FakeState, StorageObject, User } from './state.js'

/** The module shipped in the repository, loaded as Nakama loads its js_entrypoint. */
export const MODULE_PATH = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../nakama/modules/playfield.js')

type RpcFunction = (ctx: unknown, logger: unknown, nk: unknown, payload: string) => unknown

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/** The loaded module: its RPCs by lower-cased id, and the script's global scope (for unit tests). */
export interface Runtime {
  rpcs: Map<string, RpcFunction>
  scope: vm.Context
  nk: ReturnType<typeof createNk>
  logs: string[]
}

/**
 * Run the module in its own realm the way Nakama's goja runtime does: one script, a top-level
 * InitModule, RPCs registered by top-level function identifiers (an inline function is refused).
 */
export function loadRuntime(state: FakeState, source = readFileSync(MODULE_PATH, 'utf8')): Runtime {
  const scope = vm.createContext({})
  vm.runInContext(source, scope, { filename: MODULE_PATH })
  if (typeof scope.InitModule !== 'function') throw new Error('InitModule function not found')
  const logs: string[] = []
  const logger = {
    info: (m: string) => logs.push(`info ${m}`),
    warn: (m: string) => logs.push(`warn ${m}`),
    error: (m: string) => logs.push(`error ${m}`),
    debug: (m: string) => logs.push(`debug ${m}`),
  }
  const rpcs = new Map<string, RpcFunction>()
  const initializer = {
    registerRpc(id: string, fn: RpcFunction) {
      if (typeof fn !== 'function' || !fn.name || scope[fn.name] !== fn) {
        throw new Error(`js rpc function ${id} must be a top-level named function (errInlinedFunction)`)
      }
      rpcs.set(id.toLowerCase(), fn)
    },
  }
  const nk = createNk(state)
  scope.InitModule({ env: {}, executionMode: 'run_once' }, logger, nk, initializer)
  return { rpcs, scope, nk, logs }
}

/** Run an RPC: a thrown {message, code} picks the gRPC code, anything else is 13 with a stack. */
export function invokeRpc(runtime: Runtime, id: string, payload: string, ctx: Record<string, unknown>): string {
  const fn = runtime.rpcs.get(id.toLowerCase())
  if (!fn) throw new FakeError(5, 'RPC function not found')
  const logger = { info() {}, warn: (m: string) => runtime.logs.push(`warn ${m}`), error() {}, debug() {} }
  try {
    const out = fn({ env: {}, executionMode: 'rpc', userId: '', username: '', queryParams: {}, ...ctx }, logger, runtime.nk, payload)
    return out === undefined || out === null ? '' : String(out)
  } catch (e) {
    if (e && typeof e === 'object' && 'code' in e && typeof (e as { code: unknown }).code === 'number') {
      throw new FakeError((e as { code: number }).code, String((e as { message?: unknown }).message))
    }
    throw new FakeError(13, `${String((e as Error)?.message ?? e)} at invokeFunction (native)`)
  }
}

function intArg(value: unknown, name: string): number {
  if (value === undefined || value === null) return 0
  if (typeof value !== 'number' || !Number.isInteger(value)) throw new TypeError(`expects number: ${name}`)
  return value
}

function jsRecord(r: StoredRecord & { rank: number }) {
  return {
    leaderboardId: r.leaderboardId, ownerId: r.ownerId, username: r.username, score: r.score, subscore: r.subscore,
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
function createNk(state: FakeState) {
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
        try {
          state.leaderboards.expiry({ resetSchedule } as Board, state.now())
        } catch {
          throw new TypeError('expects reset schedule to be a valid CRON expression')
        }
      }
      state.leaderboards.create({
        id, authoritative: Boolean(authoritative), sortOrder: sort, operator: op, resetSchedule: resetSchedule || null,
        metadata: metadata ?? {}, enableRanks: Boolean(enableRanks), createTime: Math.floor(state.now() / 1000),
      })
    },
    leaderboardsGetId(ids: string[]) {
      return ids.flatMap((id) => {
        const b = state.leaderboards.boards.get(id)
        if (!b) return []
        const next = state.leaderboards.expiry(b, state.now())
        return [{ id: b.id, authoritative: b.authoritative, sortOrder: b.sortOrder === 'asc' ? 0 : 1, operator: OPERATOR_NAME[b.operator],
          prevReset: 0, nextReset: next, metadata: b.metadata, createTime: b.createTime }]
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
      return jsRecord(state.leaderboards.write(id, ownerId, username ?? null, s, ss, meta, op, state.now()))
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
        const o = state.read(r.collection, r.key, r.userId ?? '00000000-0000-0000-0000-000000000000')
        return o ? [jsObject(o)] : []
      })
    },
    storageWrite(writes: Array<{ collection: string; key: string; userId?: string; value: unknown; version?: string; permissionRead?: number; permissionWrite?: number }>) {
      for (const w of writes) {
        if (w.value === null || typeof w.value !== 'object' || Array.isArray(w.value)) throw new TypeError('expects value to be an object')
      }
      const acks = state.write(writes.map((w) => ({ ...w, userId: w.userId ?? '00000000-0000-0000-0000-000000000000' })))
      return acks.map((o) => ({ collection: o.collection, key: o.key, userId: o.userId, version: o.version }))
    },
    storageDelete(deletes: Array<{ collection: string; key: string; userId?: string; version?: string }>) {
      state.remove(deletes.map((d) => ({ ...d, userId: d.userId ?? '00000000-0000-0000-0000-000000000000' })))
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
      return { user: jsUser(u), wallet: {}, email: u.email ?? '', customId: u.customId ?? '', devices: [], verifyTime: 0, disableTime: 0 }
    },
    accountUpdateId(id: string, username?: string | null, displayName?: string | null) {
      uuid(id, 'user id')
      try {
        if (username !== undefined && username !== null) state.rename(id, username)
        if (displayName !== undefined && displayName !== null) state.users.get(id)!.displayName = displayName
      } catch (e) {
        // core_account.go turns the unique violation into this message for every caller.
        if (e instanceof FakeError && e.code === 6) throw new Error('Username is already in use.')
        throw e instanceof FakeError ? new Error(e.message) : e
      }
    },
    sessionLogout(userId: string, token?: string | null, refreshToken?: string | null) {
      uuid(userId, 'user id')
      for (const t of [token, refreshToken]) {
        if (!t) continue
        const claims = JSON.parse(Buffer.from(t.split('.')[1] ?? '', 'base64url').toString() || '{}') as { tid?: string; uid?: string }
        if (claims.uid === userId && claims.tid) state.blacklist.add(claims.tid)
      }
    },
  }
}
