import type { IncomingMessage } from 'node:http'
import contentType from 'content-type'
import type { Validator } from 'typebox/compile'
import type { TSchema, Static } from 'typebox'
import { HttpError } from './errors.js'

/** Bodies above this many bytes are refused with 413 (CONTRACT §4). */
const MAX_BODY_BYTES = 65_536

/**
 * Read the raw body, refusing more than MAX_BODY_BYTES as soon as the count passes it. Listeners,
 * not `for await`: leaving a for-await early destroys the request and with it the socket, so the
 * 413 could never be sent; here the rest is left unread and the server closes the socket after it.
 */
function readRaw(req: IncomingMessage): Promise<Buffer> {
  const declared = Number(req.headers['content-length'])
  if (declared > MAX_BODY_BYTES) return Promise.reject(tooLarge())
  if (req.readableEnded) return Promise.resolve(Buffer.alloc(0))
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    const done = (): void => {
      req.off('data', onData).off('end', onEnd).off('error', onError).off('close', onClose)
    }
    const onData = (chunk: Buffer): void => {
      size += chunk.length
      if (size > MAX_BODY_BYTES) {
        done()
        req.pause()
        reject(tooLarge())
        return
      }
      chunks.push(chunk)
    }
    const onEnd = (): void => {
      done()
      resolve(Buffer.concat(chunks, size))
    }
    const onError = (err: Error): void => {
      done()
      reject(err)
    }
    const onClose = (): void => {
      done()
      reject(new Error('the client closed the request before its body ended'))
    }
    req.on('data', onData).on('end', onEnd).on('error', onError).on('close', onClose)
  })
}

function tooLarge(): HttpError {
  return new HttpError(413, 'PAYLOAD_TOO_LARGE', `body larger than ${MAX_BODY_BYTES} bytes`)
}

/** True when the request announces a body (a length above 0 or chunked transfer). */
function hasBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length']
  if (length !== undefined) return Number(length) > 0
  return req.headers['transfer-encoding'] !== undefined
}

/**
 * Read a JSON body. An empty body gives `undefined` when `optional`; otherwise the body must be
 * `application/json` (415) and parse (400 INVALID_JSON).
 */
export async function readJson(req: IncomingMessage, optional = false): Promise<unknown> {
  if (optional && !hasBody(req)) {
    await readRaw(req)
    return undefined
  }
  let type: string
  try {
    type = contentType.parse(req).type
  } catch {
    type = ''
  }
  if (type !== 'application/json') {
    throw new HttpError(415, 'UNSUPPORTED_MEDIA_TYPE', 'body must be application/json')
  }
  const raw = await readRaw(req)
  if (optional && raw.length === 0) return undefined
  try {
    return JSON.parse(raw.toString('utf8'))
  } catch {
    throw new HttpError(400, 'INVALID_JSON', 'body is not valid JSON')
  }
}

/** Check `value` against a compiled schema; 400 VALIDATION_FAILED with `details` on failure. */
export function check<T extends TSchema>(schema: Validator<{}, T>, value: unknown): Static<T> {
  if (schema.Check(value)) return value as Static<T>
  const details = [...schema.Errors(value)]
    .filter((e) => e.keyword !== 'boolean')
    .slice(0, 10)
    .map((e) => ({ path: e.instancePath === '' ? '/' : e.instancePath, message: e.message }))
  throw new HttpError(400, 'VALIDATION_FAILED', 'request does not match the schema', details)
}

/** Read a JSON body and check it against a schema in one step. */
export async function readBody<T extends TSchema>(req: IncomingMessage, schema: Validator<{}, T>): Promise<Static<T>> {
  return check(schema, await readJson(req))
}
