import type http from 'node:http'
import type { Duplex } from 'node:stream'

/**
 * Each time a socket is given to the server again, Node's HTTP code adds its listeners to it
 * anew, and so does whatever listens for connections: a connection asking for h2c at every
 * request would grow without end. Its request read anew this many times gets `Connection: close`.
 */
const MAX_REINJECTIONS = 5
/** How many times each socket was read anew. */
const reinjections = new WeakMap<Duplex, number>()

/**
 * Node hands every request that asks for an upgrade to the `upgrade` listener, with its body left
 * on the socket: without this, `curl --http2` (which asks for h2c) got a bare 404 from every API
 * endpoint. RFC 9110 §7.8 lets a server ignore an Upgrade it does not offer: the request is written
 * back without it (and without `upgrade` among the Connection options) ahead of the bytes that
 * followed it, and the socket is given to the server as a new connection (Node's documented way to
 * inject one), whose parser reads the request, its body and any pipelined after it as usual.
 * The MAX_REINJECTIONS-th time on one connection, the request is read with `Connection: close`.
 */
export function reinject(server: http.Server, req: http.IncomingMessage, socket: Duplex, head: Buffer): void {
  const count = (reinjections.get(socket) ?? 0) + 1
  reinjections.set(socket, count)
  const closing = count >= MAX_REINJECTIONS
  const lines = [`${req.method} ${req.url} HTTP/${req.httpVersion}`]
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i]!
    const value = req.rawHeaders[i + 1]!
    const lower = name.toLowerCase()
    if (lower === 'upgrade') continue
    if (lower === 'connection') {
      const options = value.split(',').map((o) => o.trim()).filter((o) => o !== '' && !['upgrade', ...(closing ? ['keep-alive', 'close'] : [])].includes(o.toLowerCase()))
      if (options.length > 0) lines.push(`${name}: ${options.join(', ')}`)
      continue
    }
    lines.push(`${name}: ${value}`)
  }
  if (closing) lines.push('Connection: close')
  // Header values came off the wire as latin1 strings: written back as latin1, every byte is kept.
  socket.unshift(Buffer.concat([Buffer.from(lines.join('\r\n') + '\r\n\r\n', 'latin1'), head]))
  server.emit('connection', socket)
}
