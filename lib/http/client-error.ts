import { nextRequestId } from './request-id.js'
import type { Duplex } from 'node:stream'

/** Parser errors with their own answer; every other one is 400 BAD_REQUEST. */
const ANSWERS: Record<string, [status: number, reason: string, code: string, message: string]> = {
  HPE_HEADER_OVERFLOW: [431, 'Request Header Fields Too Large', 'HEADERS_TOO_LARGE', 'request headers larger than 16 KiB (a long URL counts)'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'Request Timeout', 'REQUEST_TIMEOUT', 'the request was not complete in time'],
}
const MALFORMED: [number, string, string, string] = [400, 'Bad Request', 'BAD_REQUEST', 'malformed HTTP request']

/**
 * A request Node's parser refused before any handler saw it (a URL past the header limit,
 * conflicting Content-Length headers, bytes that are not HTTP). Node would answer with an empty
 * body; this answers the contract's `{error, code}` JSON with an X-Request-Id, logs the request
 * id, and closes the connection, whose remaining bytes cannot be trusted.
 */
export function serverOnClientError(err: NodeJS.ErrnoException, socket: Duplex, log: (entry: Record<string, unknown>) => void): void {
  const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage
  if (err.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
    socket.destroy()
    return
  }
  const [status, reason, code, message] = ANSWERS[err.code ?? ''] ?? MALFORMED
  const body = JSON.stringify({ error: message, code })
  const id = nextRequestId()
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
      `x-request-id: ${id}\r\nvary: Origin\r\nconnection: close\r\n\r\n${body}`,
  )
  log({ event: 'http.client_error', id, status, error: err.code ?? err.message })
}
