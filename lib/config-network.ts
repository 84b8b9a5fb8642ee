import { isIP, BlockList } from 'node:net'
import { Type } from './typebox.js'
import { ConfigError } from './config-error.js'
import { commaList, list, read, variable, type Env } from './config-read.js'

// Each entry is then held to the exact form by originList.
const ORIGINS = variable(Type.String({ pattern: commaList('https?://[^,\\s]+') }), 'a comma list of origins like https://play.example.com')
const PROXIES = variable(Type.String({ pattern: commaList('[0-9A-Fa-f.:/]*') }), 'a comma list of IP addresses or CIDR ranges')

/** PLATFORM_ORIGINS, or the defaults for PORT (CONTRACT §1). */
export function readOrigins(env: Env): string[] {
  return originList(read(env, 'PLATFORM_ORIGINS', ORIGINS, defaultOrigins(env)))
}

/** TRUST_PROXY: peers whose X-Forwarded-* headers are believed, loopback by default. */
export function readTrustProxy(env: Env): BlockList {
  return trustList(read(env, 'TRUST_PROXY', PROXIES, '127.0.0.1,::1,::ffff:127.0.0.1'))
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

const DEFAULT_ORIGINS = 'http://127.0.0.1:3000,http://localhost:3000'

// Labels as browsers pass them (WHATWG URL allows `_`, as in Docker service names), or an IPv6 address.
const HOST_FORM = /^(\[[0-9a-f:.]+\]|[a-z0-9_-]+(\.[a-z0-9_-]+)*\.?)(:\d+)?$/

/**
 * The origins, each exactly as a browser writes it in `Origin` (lowercase host, no default port,
 * no path or query): the check compares strings, so `https://Play.Example.com:443` would match no
 * request and refuse every state-changing one. Such an entry is a bad value, with the form to use.
 */
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

/** `[::1]` as URLs write it is the address `::1`, which is what listen and connect take. */
export function unbracket(host: string): string {
  return /^\[[^\]]*\]$/.test(host) ? host.slice(1, -1) : host
}

/** The loopback interface: 127.0.0.0/8 and ::1 (BlockList also matches 127/8 written IPv4-mapped, ::ffff:127.0.0.1). */
const LOOPBACK = new BlockList()
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4')
LOOPBACK.addAddress('::1', 'ipv6')

/**
 * True for addresses on the loopback interface: the bridge listens nowhere else (CONTRACT §1).
 * `host` is as unbracket leaves it; names are case-insensitive.
 */
export function isLoopback(host: string): boolean {
  const name = host.toLowerCase()
  if (name === 'localhost') return true
  const family = isIP(name)
  return family !== 0 && LOOPBACK.check(name, family === 4 ? 'ipv4' : 'ipv6')
}
