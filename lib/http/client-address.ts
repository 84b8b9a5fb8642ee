import { isIP, type BlockList } from 'node:net'
import { isLoopback } from '../config-network.js'
import type { IncomingMessage } from 'node:http'

/**
 * Per connection: the peer's address, or null when the peer is a trusted proxy (then each request
 * says). Kept on the socket under a symbol, as Node keeps its own per-socket state: a WeakMap
 * lookup per request cost the catalogue benchmark more than the rest of this function.
 */
const kPeer = Symbol('playfield.peer')
type PeerSocket = IncomingMessage['socket'] & { [kPeer]?: ClientAddress | null }

/** Who a request comes from, after trusted proxies. */
interface ClientAddress {
  readonly ip: string
  readonly proto: 'http' | 'https'
  /** The X-Forwarded-For hop, no address, that ended the reading (the proxy that wrote it stands for the client). */
  readonly unread?: string
}

/** The client address: the peer's, unless the peer is a trusted proxy, then the nearest untrusted X-Forwarded-For hop. */
export function clientAddress(req: IncomingMessage, trust: BlockList): ClientAddress {
  // The peer of a socket never changes: check it against the BlockList once per connection.
  const socket = req.socket as PeerSocket
  const known = socket[kPeer]
  if (known) return known
  let ip = normalize(socket.remoteAddress ?? '')
  let proto: 'http' | 'https' = 'encrypted' in socket ? 'https' : 'http'
  if (known === undefined) {
    const address = isTrusted(ip, trust) ? null : { ip, proto }
    socket[kPeer] = address
    if (address) return address
  }
  let unread: string | undefined
  const forwarded = header(req, 'x-forwarded-for')
  if (forwarded) {
    // From the nearest hop outwards, each written by the trusted one after it. A hop that is no
    // address (`unknown`, `1.2.3.4:5555`) ends the walk: what lies before it the client may have
    // written, so the client is the trusted hop that wrote it (the peer, when that is the proxy).
    const hops = forwarded.split(',')
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = normalize(hops[i]!.trim())
      if (isIP(hop) === 0) {
        unread = hop
        break
      }
      ip = hop
      if (!isTrusted(ip, trust)) break
    }
  }
  // A scheme is case-insensitive (RFC 3986 §3.1): HTTPS is https.
  const fproto = header(req, 'x-forwarded-proto')?.split(',')[0]?.trim().toLowerCase()
  if (fproto === 'https' || fproto === 'http') proto = fproto
  return unread === undefined ? { ip, proto } : { ip, proto, unread }
}

function normalize(address: string): string {
  return address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address
}

function isTrusted(ip: string, trust: BlockList): boolean {
  const family = isIP(ip)
  if (family === 0) return false
  return trust.check(ip, family === 6 ? 'ipv6' : 'ipv4') || (family === 4 && trust.check(`::ffff:${ip}`, 'ipv6'))
}

/** A request header as one string: repeated headers joined with commas. */
export function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name]
  return Array.isArray(value) ? value.join(',') : value
}

/** The block of every loopback address: this machine's own processes may connect from any of them. */
const LOOPBACK_BLOCK = '127.0.0.0/8'

/**
 * The block a client address stands for when counting its failures: an IPv4 address itself, an
 * IPv6 address its /64 (`2001:db8:a:b::/64`). A subscriber is given a /64 and may use any address
 * in it (RFC 4941 temporary addresses change on their own), so per address each guess could come
 * from a new one. For the same reason every loopback address (127.0.0.0/8, ::1) is one block: a
 * process on this machine, a developer's shell say, may connect from any of them.
 */
export function addressBlock(ip: string): string {
  if (isLoopback(ip)) return LOOPBACK_BLOCK
  if (isIP(ip) !== 6) return ip
  const [head = '', tail] = ip.toLowerCase().replace(/%.*$/, '').split('::')
  const headGroups = head === '' ? [] : head.split(':')
  // The groups `::` stands for: 8 in all, an IPv4 tail (`::1.2.3.4`) counting as two.
  const tailGroups = tail === undefined || tail === '' ? [] : tail.split(':')
  const given = [...headGroups, ...tailGroups].reduce((n, g) => n + (g.includes('.') ? 2 : 1), 0)
  const groups = tail === undefined ? headGroups : [...headGroups, ...Array<string>(8 - given).fill('0'), ...tailGroups]
  // An IPv4 client written as IPv6 (::ffff:a.b.c.d, in any spelling: upper case, expanded, in hex)
  // is that IPv4 address: its /64 would be every IPv4 client's at once.
  const last = groups[groups.length - 1]!
  const words = groups.slice(0, 6).map((g) => parseInt(g, 16))
  if (words.slice(0, 5).every((w) => w === 0) && words[5] === 0xffff) {
    if (last.includes('.')) return last
    const low = (parseInt(groups[6]!, 16) << 16) | parseInt(last, 16)
    return [24, 16, 8, 0].map((shift) => (low >>> shift) & 0xff).join('.')
  }
  return `${groups.slice(0, 4).map((g) => parseInt(g, 16).toString(16)).join(':')}::/64`
}
