import { createHash, randomUUID } from 'node:crypto'
import { FakeError } from './errors.js'
import { listAroundOwner, listRecords, writeRecord } from './rest-leaderboards.js'
import { invokeBeforeHook, invokeRpc, type Runtime } from './runtime.js'
import { signToken, verifyToken, type Claims } from './jwt.js'
import { parseKeepingNumbers, stringField, stringMap } from './json.js'
import { ACCOUNT_FIELDS, accountUpdate, fitsColumns, type AccountUpdate } from './rest-account.js'
import { checkUsername, type FakeState, type User } from './state.js'

/** Session settings (nakama-api.md §2 names them). */
export interface SessionConfig {
  encryptionKey: string
  refreshEncryptionKey: string
  tokenExpirySec: number
  refreshTokenExpirySec: number
}

/** One parsed request as the handlers see it. */
export interface Call {
  method: string
  path: string
  query: URLSearchParams
  body: string
  contentType: string | undefined
  /** Set by the auth step: the caller's session claims (Bearer routes). */
  claims?: Claims
}

/** A handler's answer: JSON (null for an empty 200) or raw text with a content type. */
export type Answer = { json: unknown } | { raw: string; contentType: string }

const EMAIL = /^.+@.+\..+$/

/**
 * Custom and device ids: no whitespace or control characters (nakama-api.md §1.1). Nakama's
 * invalidCharsRegex is POSIX `([[:cntrl:]]|[[:space:]])+`, ASCII classes: 0x00-0x1f, DEL (0x7f) and
 * the space; a Unicode space such as U+00A0 is neither.
 */
const INVALID_ID = /[\u0000-\u0020\u007f]/

/** The REST handlers of the calls the Nakama backend makes, following nakama-api.md. */
export class Api {
  constructor(readonly state: FakeState, readonly runtime: Runtime, readonly session: SessionConfig) {}

  #session(user: User, created: boolean, tid: string = randomUUID(), iat?: number, vrs?: Record<string, string>) {
    const now = Math.floor(this.state.now() / 1000)
    const base = { tid, uid: user.id, usn: user.username, ...(vrs && Object.keys(vrs).length ? { vrs } : {}) }
    const issuedAt = this.state.flavour.iat ? { iat: iat ?? now } : {}
    let tids = this.state.issued.get(user.id)
    if (!tids) this.state.issued.set(user.id, (tids = new Set()))
    tids.add(tid)
    return {
      ...(created ? { created: true } : {}),
      token: signToken({ ...base, exp: now + this.session.tokenExpirySec, ...issuedAt }, this.session.encryptionKey),
      refresh_token: signToken({ ...base, exp: now + this.session.refreshTokenExpirySec, ...issuedAt }, this.session.refreshEncryptionKey),
    }
  }

  /** grpc-gateway reads the BoolValue with strconv.ParseBool: absent is true, anything else unknown a 400. */
  #create(query: URLSearchParams): boolean {
    const value = query.get('create')
    if (value === null) return true
    if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(value)) return true
    if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(value)) return false
    throw new FakeError(3, `parsing field "create": strconv.ParseBool: parsing ${JSON.stringify(value)}: invalid syntax`)
  }

  authenticateCustom(call: Call): Answer {
    // The gateway decodes the body, then the query parameters, before the handler runs.
    const account = parseKeepingNumbers(call.body)
    const id = stringField(account, 'id') ?? ''
    const vars = stringMap(account, 'vars')
    const create = this.#create(call.query)
    checkGivenUsername(call.query)
    if (id === '') throw new FakeError(3, 'Custom ID is required.')
    if (INVALID_ID.test(id)) throw new FakeError(3, 'Custom ID invalid, no spaces or control characters allowed.')
    if (Buffer.byteLength(id) < 6 || Buffer.byteLength(id) > 128) throw new FakeError(3, 'Custom ID invalid, must be 6-128 bytes.')
    const existing = [...this.state.users.values()].find((u) => u.customId === id)
    if (existing) return { json: this.#session(notBanned(existing), false, undefined, undefined, vars) }
    if (!create) throw new FakeError(5, 'User account not found.')
    const user = this.state.createUser(call.query.get('username') || undefined, { customId: id })
    return { json: this.#session(user, true, undefined, undefined, vars) }
  }

  /** AuthenticateDevice: the id lives in user_device, one row per device (nakama-api.md §1.1). */
  authenticateDevice(call: Call): Answer {
    const account = parseKeepingNumbers(call.body)
    const id = stringField(account, 'id') ?? ''
    const vars = stringMap(account, 'vars')
    const create = this.#create(call.query)
    checkGivenUsername(call.query)
    if (id === '') throw new FakeError(3, 'Device ID is required.')
    if (INVALID_ID.test(id)) throw new FakeError(3, 'Device ID invalid, no spaces or control characters allowed.')
    if (Buffer.byteLength(id) < 10 || Buffer.byteLength(id) > 128) throw new FakeError(3, 'Device ID invalid, must be 10-128 bytes.')
    const existing = [...this.state.users.values()].find((u) => u.deviceId === id)
    if (existing) return { json: this.#session(notBanned(existing), false, undefined, undefined, vars) }
    if (!create) throw new FakeError(5, 'User account not found.')
    const user = this.state.createUser(call.query.get('username') || undefined, { deviceId: id })
    return { json: this.#session(user, true, undefined, undefined, vars) }
  }

  authenticateEmail(call: Call): Answer {
    const account = parseKeepingNumbers(call.body)
    const email = stringField(account, 'email') ?? ''
    const password = stringField(account, 'password') ?? ''
    const vars = stringMap(account, 'vars')
    const create = this.#create(call.query)
    checkGivenUsername(call.query)
    if (email !== '') {
      if (/[\s\u0000-\u001f]/.test(email)) throw new FakeError(3, 'Invalid email address, no spaces or control characters allowed.')
      if (!EMAIL.test(email)) throw new FakeError(3, 'Invalid email address format.')
      if (Buffer.byteLength(email) < 10 || Buffer.byteLength(email) > 255) throw new FakeError(3, 'Invalid email address, must be 10-255 bytes.')
    }
    // Go's len: bytes, whatever the message says.
    if (Buffer.byteLength(password) < 8) throw new FakeError(3, 'Password must be at least 8 characters long.')
    const username = call.query.get('username') ?? ''
    const hash = createHash('sha256').update(password).digest('hex')
    if (email === '') {
      // AuthenticateUsername: the username/password path, which never creates an account.
      if (username === '') throw new FakeError(3, 'Username is required when email address is not supplied.')
      const user = this.state.byUsername(username)
      if (!user) throw new FakeError(5, 'User account not found.')
      if (notBanned(user).password !== hash) throw new FakeError(16, 'Invalid credentials.')
      return { json: this.#session(user, false, undefined, undefined, vars) }
    }
    const clean = email.toLowerCase()
    const existing = [...this.state.users.values()].find((u) => u.email === clean)
    if (existing) {
      if (notBanned(existing).password !== hash) throw new FakeError(16, 'Invalid credentials.')
      return { json: this.#session(existing, false, undefined, undefined, vars) }
    }
    if (!create) throw new FakeError(5, 'User account not found.')
    const user = this.state.createUser(username || undefined, { email: clean, password: hash })
    return { json: this.#session(user, true, undefined, undefined, vars) }
  }

  /** Same tid (and iat), username re-read, not single use (nakama-api.md §1.2). */
  refresh(call: Call): Answer {
    const body = parseKeepingNumbers(call.body)
    const token = stringField(body, 'token') ?? ''
    if (token === '') throw new FakeError(3, 'Refresh token is required.')
    const claims = verifyToken(token, this.session.refreshEncryptionKey, Math.floor(this.state.now() / 1000))
    if (!claims || this.state.blacklist.refresh.has(claims.tid)) throw new FakeError(16, 'Refresh token invalid or expired.')
    const user = this.state.users.get(claims.uid)
    if (!user) throw new FakeError(5, 'User account not found.')
    notBanned(user)
    const vrs = stringMap(body, 'vars') ?? claims.vrs
    return { json: this.#session(user, false, claims.tid, claims.iat, vrs) }
  }

  logout(call: Call): Answer {
    const body = parseKeepingNumbers(call.body)
    const uid = call.claims!.uid
    // protojson first: a token that is no string fails the whole call before anything is invalidated.
    const pairs: Array<['session' | 'refresh', string, string, string]> = [
      ['session', stringField(body, 'token') ?? '', this.session.encryptionKey, 'Session token invalid.'],
      ['refresh', stringField(body, 'refresh_token', 'refreshToken') ?? '', this.session.refreshEncryptionKey, 'Refresh token invalid.'],
    ]
    const removed: Array<['session' | 'refresh', string]> = []
    for (const [kind, token, key, message] of pairs) {
      if (token === '') continue
      // parseToken checks expiry: an expired token is refused like a forged one.
      const claims = verifyToken(token, key, Math.floor(this.state.now() / 1000))
      if (!claims || claims.uid !== uid) throw new FakeError(3, message)
      removed.push([kind, claims.tid])
    }
    this.state.logOut(uid, removed)
    return { json: {} }
  }

  getAccount(call: Call): Answer {
    const user = this.state.users.get(call.claims!.uid)
    if (!user) throw new FakeError(5, 'User account not found.')
    const time = (t: number) => new Date(t * 1000).toISOString().replace('.000Z', 'Z')
    // Empty (NULL) columns are left out (nakama-api.md §1.4).
    const optional = (name: string, value: string | undefined) => (value ? { [name]: value } : {})
    const out: Record<string, unknown> = {
      user: {
        id: user.id, username: user.username, ...optional('display_name', user.displayName), ...optional('avatar_url', user.avatarUrl),
        ...optional('lang_tag', user.langTag), ...optional('location', user.location), ...optional('timezone', user.timezone),
        metadata: '{}', create_time: time(user.createTime), update_time: time(user.updateTime),
      },
      wallet: '{}',
    }
    if (user.email) out.email = user.email
    if (user.deviceId) out.devices = [{ id: user.deviceId }]
    if (user.customId) out.custom_id = user.customId
    return { json: out }
  }

  /**
   * ApiServer.UpdateAccount: the module's before-hook first (it may refuse or rewrite the request),
   * then the username check, then updateAccounts. A taken name is 400 code 3, not 409 (nakama-api.md §1.5).
   */
  updateAccount(call: Call): Answer {
    let update = accountUpdate(parseKeepingNumbers(call.body))
    const claims = call.claims!
    const request = Object.fromEntries(Object.keys(ACCOUNT_FIELDS).map((k) => [k, update![k as keyof AccountUpdate] ?? null]))
    const hooked = invokeBeforeHook(this.runtime, 'updateaccount', request, {
      userId: claims.uid, username: claims.usn, vars: claims.vrs ?? {}, userSessionExp: claims.exp,
    })
    if (hooked !== undefined) {
      // protojsonUnmarshaler refusing the hook's answer.
      const refused = new FakeError(13, 'Could not complete runtime Before function.')
      if (hooked === null || typeof hooked !== 'object' || Array.isArray(hooked)) throw refused
      try {
        update = accountUpdate(hooked as Record<string, unknown>)
      } catch {
        throw refused
      }
    }
    if (update.username !== undefined && (Buffer.byteLength(update.username) < 1 || Buffer.byteLength(update.username) > 128)) {
      throw new FakeError(3, 'Username invalid, must be 1-128 bytes.')
    }
    if (Object.keys(update).length === 0) throw new FakeError(3, 'No fields to update.')
    // One UPDATE statement: a value wider than its VARCHAR column fails it whole (nakama-api.md §1.5).
    if (!fitsColumns(update)) throw new FakeError(13, 'Error while trying to update account.')
    try {
      this.state.updateAccount(claims.uid, update)
    } catch (e) {
      if (!(e instanceof FakeError) || e.code !== 6) throw e
      throw new FakeError(3, this.state.flavour.wrappedRenameError ? 'rpc error: code = AlreadyExists desc = Username is already in use.' : 'Username is already in use.')
    }
    return { json: {} }
  }

  listRecords(call: Call, id: string): Answer {
    return listRecords(this.state, call, id)
  }

  writeRecord(call: Call, id: string): Answer {
    return writeRecord(this.state, call, id)
  }

  listAroundOwner(call: Call, id: string, owner: string): Answer {
    return listAroundOwner(this.state, call, id, owner)
  }

  /** RpcFuncHttp: unwrap passes the raw body and answers raw; otherwise a JSON string in, {payload} out. */
  rpc(call: Call, id: string): Answer {
    const unwrap = call.query.has('unwrap')
    let payload = call.method === 'GET' ? '' : call.body
    if (!unwrap && call.method !== 'GET' && payload !== '') {
      let decoded: unknown
      try {
        decoded = JSON.parse(payload)
      } catch {
        throw new FakeError(3, 'json: cannot unmarshal input into Go value of type string')
      }
      if (typeof decoded !== 'string') throw new FakeError(3, `json: cannot unmarshal ${Array.isArray(decoded) ? 'array' : typeof decoded} into Go value of type string`)
      payload = decoded
    }
    const queryParams: Record<string, string[]> = {}
    for (const [k, v] of call.query) if (k !== 'http_key') (queryParams[k] ??= []).push(v)
    // Bearer calls run as the token's user (nakama-api.md §1.9 point 3); HTTP-key calls as nobody.
    const claims = call.claims
    const out = invokeRpc(this.runtime, id, payload, {
      userId: claims?.uid ?? '', username: claims?.usn ?? '', vars: claims?.vrs ?? {}, userSessionExp: claims?.exp ?? 0, queryParams,
    })
    if (unwrap) return { raw: out, contentType: call.contentType ?? 'text/plain' }
    return { json: { payload: out } }
  }
}

/** A banned account is refused before its password is compared (nakama-api.md §1.1, §1.2: 403, code 7). */
function notBanned(user: User): User {
  if (user.disableTime) throw new FakeError(7, 'User account banned.')
  return user
}

/** A `username` given to an authenticate call is checked before any lookup (nakama-api.md §1.1); an empty one means none. */
function checkGivenUsername(query: URLSearchParams): void {
  const username = query.get('username')
  if (username) checkUsername(username)
}
