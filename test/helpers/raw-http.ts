import http from 'node:http'
import { setTimeout as sleep } from 'node:timers/promises'
import net from 'node:net'

/** A response as received: status, headers, and the body's bytes undecoded (no decompression). */
export interface RawResponse {
  status: number
  headers: http.IncomingHttpHeaders
  body: Buffer
}

/** A raw response's body parsed as JSON. */
export function jsonOf(res: RawResponse): unknown {
  return JSON.parse(res.body.toString('utf8'))
}

/**
 * One HTTP request with exactly the given headers (fetch adds Accept-Encoding and decompresses;
 * these tests need the bytes on the wire). The path is sent as written, dot segments included.
 */
export function rawRequest(base: string, method: string, path: string, headers: Record<string, string> = {}, body?: string | Buffer): Promise<RawResponse> {
  const url = new URL(base)
  return new Promise((resolve, reject) => {
    const req = http.request({ host: url.hostname, port: url.port, method, path, headers, agent: false }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }))
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end(body)
  })
}

/** Poll `logs` until an entry with `event` appears after index `from`; resolves with it. */
export async function waitForLog(logs: Record<string, unknown>[], event: string, from = 0, timeoutMs = 10_000): Promise<Record<string, unknown>> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const found = logs.slice(from).find((entry) => entry.event === event)
    if (found) return found
    if (Date.now() > deadline) throw new Error(`no ${event} log line within ${timeoutMs} ms`)
    await sleep(20)
  }
}

/** Write `bytes` as they are on a new connection; resolve with everything the server sent before it closed (latin1). */
export function rawBytes(port: number, bytes: string | Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(bytes))
    let text = ''
    socket.setEncoding('latin1').on('data', (d: string) => (text += d))
    socket.on('close', () => resolve(text))
    socket.on('error', reject)
  })
}

/**
 * Send `head` (request line and headers, without the blank line) as written on a new connection,
 * and resolve with everything the server sent before it closed: for targets no HTTP client sends.
 */
export async function rawExchange(port: number, head: string): Promise<string> {
  return Buffer.from(await rawBytes(port, `${head}\r\nConnection: close\r\n\r\n`), 'latin1').toString('utf8')
}

/**
 * Write `head` on a new connection, then `drip` every 2 s (never idle long enough for any other
 * time-out, never done), until the server closes it or `giveUpMs` passes; resolve with what the
 * server sent (latin1) and the seconds it took.
 */
export function trickle(port: number, head: string, drip: string, giveUpMs: number): Promise<{ text: string; seconds: number }> {
  const started = Date.now()
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(head))
    const dripping = setInterval(() => socket.writable && socket.write(drip), 2000)
    let text = ''
    socket.setEncoding('latin1').on('data', (d: string) => (text += d))
    socket.on('close', () => {
      clearInterval(dripping)
      resolve({ text, seconds: (Date.now() - started) / 1000 })
    })
    socket.on('error', reject)
    setTimeout(() => socket.destroy(), giveUpMs)
  })
}
