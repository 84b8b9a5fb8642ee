import type { BlockList } from 'node:net'
import path from 'node:path'
import { Type } from './typebox.js'
import { ConfigError } from './config-error.js'
import { isLoopback, readOrigins, readTrustProxy, unbracket } from './config-network.js'
import { commaList, list, port, read, variable, type Env, type Variable } from './config-read.js'

const HOST = variable(Type.String({ minLength: 1, pattern: '^[0-9A-Za-z.:\\-\\[\\]]+$' }), 'an IP address or host name')
// No space at either end: `DATA_DIR="/srv/data "` names another, empty directory.
const PATH = variable(Type.String({ pattern: '^\\S(.*\\S)?$' }), 'a directory path')
const BACKEND = variable(Type.Union([Type.Literal('embedded'), Type.Literal('nakama')]), '"embedded" or "nakama"')
const URL_VAR = variable(Type.String({ pattern: '^https?://[^\\s]+$' }), 'an http(s) URL')
// The keys travel as the user part of HTTP Basic auth, which ends at the first colon (nakama-api.md §1.0).
const KEY = variable(Type.String({ minLength: 1, pattern: '^[^\\s:]+$' }), 'a non-empty string without spaces or colons (Basic auth ends the key at the first colon)')
const SECRETS = variable(
  Type.String({ pattern: '^[^,\\s]{32,}(,[^,\\s]{32,})*$' }),
  'a comma list of secrets, each at least 32 characters without spaces',
)
const COUNT = variable(Type.String({ pattern: '^[1-9][0-9]{0,3}$' }), 'an integer from 1 to 9999')
const USER = variable(Type.String({ pattern: '^[a-z_][a-z0-9_-]{0,31}$' }), 'a system account name')
const SHELL_PATH = variable(Type.String({ pattern: '^/\\S+$' }), 'an absolute path to a shell')
/** A user id as both backends write it: a lower-case UUID. */
export const USER_ID = '[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}'
// Entries only an account could have: `alice;bob` would admit no one, and start without a word.
// Ids as both backends write them, lower case: the gate compares ids exactly.
const ACCOUNT = `(?:[A-Za-z0-9][A-Za-z0-9_-]{2,23}|${USER_ID})?`
const LIST = variable(Type.String({ pattern: commaList(ACCOUNT) }), 'a comma list of user ids (lower-case UUIDs) or usernames (3-24 of A-Z a-z 0-9 _ -), spaces only around the commas')
const SECONDS = variable(Type.String({ pattern: '^(0|[1-9][0-9]{0,4})$' }), 'a whole number of seconds from 0 to 99999')
const BOOL = variable(Type.Union([Type.Literal('true'), Type.Literal('false')]), '"true" or "false"')

/** NAKAMA_URL as fetch takes it: fetch refuses a URL with a user name or password, so every call would fail. */
function nakamaUrl(raw: string): string {
  const url = URL.canParse(raw) ? new URL(raw) : null
  if (url && (url.username !== '' || url.password !== '')) {
    // Not echoed: the value holds a password.
    throw new ConfigError('NAKAMA_URL: (a URL with a user name or password, not shown) is invalid; expected an http(s) URL without credentials, such as http://127.0.0.1:7350 (the keys go in NAKAMA_SERVER_KEY and NAKAMA_HTTP_KEY)')
  }
  return raw.replace(/\/+$/, '')
}

/** Where the Nakama cluster is and its two keys (GAME_BACKEND=nakama). */
export interface NakamaConfig {
  url: string
  serverKey: string
  httpKey: string
}

/** The platform's configuration, read once at start and frozen. */
export interface PlatformConfig {
  host: string
  port: number
  origins: string[]
  dataDir: string
  manifestsDir: string
  screenshotsDir: string
  gameBackend: 'embedded' | 'nakama'
  nakama: NakamaConfig | null
  /** SESSION_SECRET as given (a comma list), or null to use the one generated into DATA_DIR. */
  sessionSecret: string | null
  /** TERMINAL_TICKET_SECRET as given, or null to use the one generated into DATA_DIR. */
  ticketSecret: string | null
  terminalHost: string
  terminalPort: number
  devAccessUsers: string[]
  devAccessAll: boolean
  /** Peers whose X-Forwarded-* headers are believed (TRUST_PROXY, default loopback). */
  trustProxy: BlockList
}

/** The terminal bridge's configuration. */
export interface BridgeConfig {
  host: string
  port: number
  origins: string[]
  dataDir: string
  ticketSecret: string | null
  maxConn: number
  user: string | null
  shell: string
  /** Where the platform answers POST /dev/terminal/access (from HOST and PORT); null when they name none (platformUrl). */
  platformUrl: string | null
  /** TERMINAL_ACCESS_CHECK_S in ms: how often each open terminal's access is checked again; 0 never. */
  accessCheckMs: number
}

function common(env: Env) {
  const dataDir = path.resolve(read(env, 'DATA_DIR', PATH, './data'))
  // The platform forwards the ticket to the bridge in the clear: the bridge is on this machine.
  const terminalHost = unbracket(read(env, 'TERMINAL_HOST', HOST, '127.0.0.1'))
  if (!isLoopback(terminalHost)) {
    throw new ConfigError(`TERMINAL_HOST: ${JSON.stringify(terminalHost)} is not a loopback address; expected 127.0.0.1, ::1 or localhost`)
  }
  return {
    origins: readOrigins(env),
    dataDir,
    ticketSecret: read(env, 'TERMINAL_TICKET_SECRET', SECRETS) ?? null,
    terminalHost,
    terminalPort: port(env, 'TERMINAL_PORT', '7681'),
  }
}

/** Read and check the platform's variables (CONTRACT §1); throws ConfigError on the first bad one. */
export function loadPlatformConfig(env: Env = process.env): Readonly<PlatformConfig> {
  const base = common(env)
  const gameBackend = read(env, 'GAME_BACKEND', BACKEND, 'embedded') as 'embedded' | 'nakama'
  let nakama: NakamaConfig | null = null
  if (gameBackend === 'nakama') {
    const need = (name: string, spec: Variable): string => {
      const value = read(env, name, spec)
      if (value === undefined) throw new ConfigError(`${name}: missing; required when GAME_BACKEND=nakama (${spec.expected})`)
      return value
    }
    nakama = {
      url: nakamaUrl(need('NAKAMA_URL', URL_VAR)),
      serverKey: need('NAKAMA_SERVER_KEY', KEY),
      httpKey: need('NAKAMA_HTTP_KEY', KEY),
    }
  }
  // Port 0 lets a bridge pick a free port; the platform forwards to a port it must know.
  if (base.terminalPort === 0) throw new ConfigError('TERMINAL_PORT: "0" names no port the platform can forward /terminal-ws/ to; expected the bridge\'s port, 1-65535')
  return Object.freeze({
    ...base,
    host: unbracket(read(env, 'HOST', HOST, '127.0.0.1')),
    port: port(env, 'PORT', '3000'),
    manifestsDir: path.resolve(read(env, 'MANIFESTS_DIR', PATH, './manifests')),
    screenshotsDir: path.resolve(read(env, 'SCREENSHOTS_DIR', PATH, path.join(base.dataDir, 'screenshots'))),
    gameBackend,
    nakama,
    sessionSecret: read(env, 'SESSION_SECRET', SECRETS) ?? null,
    devAccessUsers: list(read(env, 'DEV_ACCESS_USERS', LIST, '')),
    devAccessAll: read(env, 'DEV_ACCESS_ALL', BOOL, 'false') === 'true',
    trustProxy: readTrustProxy(env),
  })
}

/** Read and check the bridge's variables (CONTRACT §1). */
export function loadBridgeConfig(env: Env = process.env): Readonly<BridgeConfig> {
  const base = common(env)
  return Object.freeze({
    host: base.terminalHost,
    port: base.terminalPort,
    origins: base.origins,
    dataDir: base.dataDir,
    ticketSecret: base.ticketSecret,
    maxConn: Number(read(env, 'TERMINAL_MAX_CONN', COUNT, '4')),
    user: read(env, 'TERMINAL_USER', USER) ?? null,
    shell: read(env, 'SHELL', SHELL_PATH, '/bin/bash'),
    platformUrl: platformUrl(env),
    accessCheckMs: Number(read(env, 'TERMINAL_ACCESS_CHECK_S', SECONDS, '30')) * 1000,
  })
}

/**
 * The platform as the bridge reaches it, from the HOST and PORT the platform listens on (both read
 * the same environment file): a wildcard address is reached on loopback. Null for PORT 0, a port
 * the bridge cannot know, and for a HOST or PORT the platform itself refuses (it does not start,
 * and says why; the bridge does not stop for the platform's variables).
 */
function platformUrl(env: Env): string | null {
  let host: string
  let listening: number
  try {
    host = unbracket(read(env, 'HOST', HOST, '127.0.0.1'))
    listening = port(env, 'PORT', '3000')
  } catch (err) {
    if (err instanceof ConfigError) return null
    throw err
  }
  if (listening === 0) return null
  const reached = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host
  return `http://${reached.includes(':') ? `[${reached}]` : reached}:${listening}`
}
