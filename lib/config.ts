import { isIP, BlockList } from 'node:net'
import path from 'node:path'
import { Compile, Type, type TSchema, type Validator } from './typebox.js'
import { ConfigError } from './config-error.js'

type Env = Record<string, string | undefined>

interface Variable {
  schema: Validator<{}, TSchema>
  expected: string
}

function variable(schema: TSchema, expected: string): Variable {
  return { schema: Compile(schema), expected }
}

const PORT = variable(Type.String({ pattern: '^(0|[1-9][0-9]{0,4})$' }), 'an integer from 0 to 65535')
const HOST = variable(Type.String({ minLength: 1, pattern: '^[0-9A-Za-z.:\\-\\[\\]]+$' }), 'an IP address or host name')
// No space at either end: `DATA_DIR="/srv/data "` names another, empty directory.
const PATH = variable(Type.String({ pattern: '^\\S(.*\\S)?$' }), 'a directory path')
/** A pattern for a comma list of `entry`, spaces allowed around the commas and at the ends (list() trims them). */
const commaList = (entry: string): string => `^\\s*${entry}(\\s*,\\s*${entry})*\\s*$`
// Each entry is then held to the exact form by originList.
const ORIGINS = variable(Type.String({ pattern: commaList('https?://[^,\\s]+') }), 'a comma list of origins like https://play.example.com')
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
// Entries only an account could have: `alice;bob` would admit no one, and start without a word.
// Ids as both backends write them, lower case: the gate compares ids exactly.
const ACCOUNT = '(?:[A-Za-z0-9][A-Za-z0-9_-]{2,23}|[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12})?'
const LIST = variable(Type.String({ pattern: commaList(ACCOUNT) }), 'a comma list of user ids (lower-case UUIDs) or usernames (3-24 of A-Z a-z 0-9 _ -), spaces only around the commas')
const BOOL = variable(Type.Union([Type.Literal('true'), Type.Literal('false')]), '"true" or "false"')
const PROXIES = variable(Type.String({ pattern: commaList('[0-9A-Fa-f.:/]*') }), 'a comma list of IP addresses or CIDR ranges')

/** The value as a problem line may show it: secrets and keys (a URL's password too) are never echoed into logs. */
function shown(name: string, raw: string): string {
  if (name === 'NAKAMA_URL' && raw.includes('@')) return '(a URL with a user name or password, not shown)'
  return /SECRET|KEY/.test(name) ? `(${raw.length} characters, not shown)` : JSON.stringify(raw.slice(0, 80))
}

/** Read `name` from `env`, check it, and return it or the fallback. */
function read(env: Env, name: string, spec: Variable, fallback: string): string
function read(env: Env, name: string, spec: Variable, fallback?: undefined): string | undefined
function read(env: Env, name: string, spec: Variable, fallback?: string): string | undefined {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  const ok: boolean = spec.schema.Check(raw)
  if (!ok) throw new ConfigError(`${name}: ${shown(name, raw)} is invalid; expected ${spec.expected}`)
  return raw
}

/** NAKAMA_URL as fetch takes it: fetch refuses a URL with a user name or password, so every call would fail. */
function nakamaUrl(raw: string): string {
  const url = URL.canParse(raw) ? new URL(raw) : null
  if (url && (url.username !== '' || url.password !== '')) {
    // Not echoed: the value holds a password.
    throw new ConfigError('NAKAMA_URL: (a URL with a user name or password, not shown) is invalid; expected an http(s) URL without credentials, such as http://127.0.0.1:7350 (the keys go in NAKAMA_SERVER_KEY and NAKAMA_HTTP_KEY)')
  }
  return raw.replace(/\/+$/, '')
}

function list(value: string): string[] {
  return value.split(',').map((s) => s.trim()).filter((s) => s !== '')
}

function port(env: Env, name: string, fallback: string): number {
  const value = Number(read(env, name, PORT, fallback))
  if (value > 65535) throw new ConfigError(`${name}: "${value}" is invalid; expected ${PORT.expected}`)
  return value
}

/** Build a BlockList of trusted proxy addresses; each entry an IP address or a CIDR range. */
function trustList(raw: string): BlockList {
  const trusted = new BlockList()
  for (const entry of list(raw)) {
    const [address, bits, ...rest] = entry.split('/') as [string, string | undefined]
    const family = isIP(address)
    // Digits only: Number('') is 0, and `10.0.0.1/` must not become 10.0.0.1/0, every address.
    const prefix = bits === undefined ? undefined : /^\d{1,3}$/.test(bits) ? Number(bits) : NaN
    const max = family === 6 ? 128 : 32
    if (family === 0 || rest.length > 0 || (prefix !== undefined && !(prefix >= 0 && prefix <= max))) {
      throw new ConfigError(`TRUST_PROXY: ${JSON.stringify(entry)} is invalid; expected ${PROXIES.expected}`)
    }
    const type = family === 6 ? 'ipv6' : 'ipv4'
    if (prefix === undefined) trusted.addAddress(address, type)
    else trusted.addSubnet(address, prefix, type)
  }
  return trusted
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
}

const DEFAULT_ORIGINS = 'http://127.0.0.1:3000,http://localhost:3000'

/**
 * The origins, each exactly as a browser writes it in `Origin` (lowercase host, no default port,
 * no path or query): the check compares strings, so `https://Play.Example.com:443` would match no
 * request and refuse every state-changing one. Such an entry is a bad value, with the form to use.
 */
// Labels as browsers pass them (WHATWG URL allows `_`, as in Docker service names), or an IPv6 address.
const HOST_FORM = /^(\[[0-9a-f:.]+\]|[a-z0-9_-]+(\.[a-z0-9_-]+)*\.?)(:\d+)?$/
function originList(value: string): string[] {
  return list(value).map((entry) => {
    let url: URL | null = null
    try {
      url = new URL(entry)
    } catch {
      // not a URL at all: reported below
    }
    // A host browsers can send: `https://*.example.com` parses, but no Origin header ever holds it.
    const origin = url && HOST_FORM.test(url.host) ? url.origin : null
    if (origin === entry) return entry
    const hint = origin ? `; write it as ${origin}` : ''
    throw new ConfigError(`PLATFORM_ORIGINS: ${JSON.stringify(entry)} is not an origin as browsers send it${hint}; expected a comma list of origins like https://play.example.com`)
  })
}

/**
 * Without PLATFORM_ORIGINS: the contract's two origins of port 3000 and, when PORT names another
 * port, the same two with it, so `PORT=8080 npm start` serves a page that may sign in and open
 * the terminal. The bridge reads PORT only for this: a PORT it could not use adds nothing here
 * (the platform itself refuses it).
 */
function defaultOrigins(env: Env): string {
  const given = env.PORT
  if (!given || !/^[1-9][0-9]{0,4}$/.test(given) || Number(given) > 65535 || given === '3000') return DEFAULT_ORIGINS
  // As browsers write them: without the default port (PORT=80 is `http://127.0.0.1`).
  const origin = (host: string): string => new URL(`http://${host}:${given}`).origin
  return `${DEFAULT_ORIGINS},${origin('127.0.0.1')},${origin('localhost')}`
}

function common(env: Env) {
  const dataDir = path.resolve(read(env, 'DATA_DIR', PATH, './data'))
  // The platform forwards the ticket to the bridge in the clear: the bridge is on this machine.
  const terminalHost = unbracket(read(env, 'TERMINAL_HOST', HOST, '127.0.0.1'))
  if (!isLoopback(terminalHost)) {
    throw new ConfigError(`TERMINAL_HOST: ${JSON.stringify(terminalHost)} is not a loopback address; expected 127.0.0.1, ::1 or localhost`)
  }
  return {
    origins: originList(read(env, 'PLATFORM_ORIGINS', ORIGINS, defaultOrigins(env))),
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
    trustProxy: trustList(read(env, 'TRUST_PROXY', PROXIES, '127.0.0.1,::1,::ffff:127.0.0.1')),
  })
}

/** `[::1]` as URLs write it is the address `::1`, which is what listen and connect take. */
function unbracket(host: string): string {
  return /^\[[^\]]*\]$/.test(host) ? host.slice(1, -1) : host
}

/** True for addresses on the loopback interface: the bridge listens nowhere else (CONTRACT §1). */
function isLoopback(host: string): boolean {
  if (host === 'localhost') return true
  const bare = host.replace(/^\[|\]$/g, '')
  if (isIP(bare) === 4) return bare.startsWith('127.')
  return bare === '::1'
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
  })
}
