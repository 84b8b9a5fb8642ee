import { STATUS_CODES } from 'node:http'
import type { Duplex } from 'node:stream'

/**
 * Refuse an upgrade on its raw socket with a plain-text answer, then close it once written, as
 * ws's abortHandshake does: no WebSocket is made, nothing is spawned or forwarded. The platform
 * names its request id (the access log's), the bridge has none; `headers` are the refusal's own
 * (a 405's Allow).
 */
export function refuseUpgrade(socket: Duplex, status: number, message: string, { requestId, headers = {} }: { requestId?: string; headers?: Record<string, string> } = {}): void {
  socket.once('finish', () => socket.destroy())
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nConnection: close\r\nContent-Type: text/plain; charset=utf-8\r\nX-Content-Type-Options: nosniff\r\n` +
      (requestId === undefined ? '' : `X-Request-Id: ${requestId}\r\n`) +
      Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join('') +
      `Content-Length: ${Buffer.byteLength(message)}\r\n\r\n${message}`,
  )
}
