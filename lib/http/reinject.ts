import type http from 'node:http'
import type { Duplex } from 'node:stream'

/**
 * Node hands every request that asks for an upgrade to the `upgrade` listener, with its body left
 * on the socket: without this, `curl --http2` (which asks for h2c) got a bare 404 from every API
 * endpoint. RFC 9110 §7.8 lets a server ignore an Upgrade it does not offer: the request is written
 * back without it (and without `upgrade` among the Connection options) ahead of the bytes that
 * followed it, and the socket is given to the server as a new connection (Node's documented way to
 * inject one), whose parser reads the request, its body and any pipelined after it as usual.
 */
export function reinject(server: http.Server, req: http.IncomingMessage, socket: Duplex, head: Buffer): void {
  const lines = [`${req.method} ${req.url} HTTP/${req.httpVersion}`]
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i]!
    const value = req.rawHeaders[i + 1]!
    const lower = name.toLowerCase()
    if (lower === 'upgrade') continue
    if (lower === 'connection') {
      const options = value.split(',').map((o) => o.trim()).filter((o) => o !== '' && o.toLowerCase() !== 'upgrade')
      if (options.length > 0) lines.push(`${name}: ${options.join(', ')}`)
      continue
    }
    lines.push(`${name}: ${value}`)
  }
  // Header values came off the wire as latin1 strings: written back as latin1, every byte is kept.
  socket.unshift(Buffer.concat([Buffer.from(lines.join('\r\n') + '\r\n\r\n', 'latin1'), head]))
  server.emit('connection', socket)
}
