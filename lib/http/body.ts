import type { IncomingMessage } from 'node:http'
import { Compile, Type, type Static, type TSchema, type Validator } from '../typebox.js'
import { HttpError } from './errors.js'
import { checkNumbers } from './exact-numbers.js'
import { jsonTypeProblem } from './json-media-type.js'

/** Bodies above this many bytes are refused with 413 (CONTRACT §4). */
export const MAX_BODY_BYTES = 65_536

/**
 * Read the raw body, refusing more than MAX_BODY_BYTES as soon as the count passes it. Listeners,
 * not `for await`: leaving a for-await early destroys the request and with it the socket, so the
 * 413 could never be sent; here the rest is left unread and the server closes the socket after it.
 */
function readRaw(req: IncomingMessage): Promise<Buffer> {
  const declared = Number(req.headers['content-length'])
  if (declared > MAX_BODY_BYTES) return Promise.reject(tooLarge())
  if (req.readableEnded) return Promise.resolve(Buffer.alloc(0))
  // Gone before we began (a handler that waited first): 'close' has been and will not come again.
  if (req.destroyed) return Promise.reject(clientGone())
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    const done = (): void => {
      req.off('data', reqOnData).off('end', reqOnEnd).off('error', reqOnGone).off('close', reqOnGone)
    }
    const reqOnData = (chunk: Buffer): void => {
      size += chunk.length
      if (size > MAX_BODY_BYTES) {
        done()
        req.pause()
        reject(tooLarge())
        return
      }
      chunks.push(chunk)
    }
    const reqOnEnd = (): void => {
      done()
      resolve(Buffer.concat(chunks, size))
    }
    // The client went away mid-body ('error' is Node's "aborted"); the access log shows 499.
    const reqOnGone = (): void => {
      done()
      reject(clientGone())
    }
    req.on('data', reqOnData).on('end', reqOnEnd).on('error', reqOnGone).on('close', reqOnGone)
  })
}

/** The client went away before the body was read: a client's doing, not a fault to log as a 500. */
function clientGone(): HttpError {
  return new HttpError(400, 'BAD_REQUEST', 'the client closed the request before its body ended')
}

function tooLarge(): HttpError {
  return new HttpError(413, 'PAYLOAD_TOO_LARGE', `body larger than ${MAX_BODY_BYTES} bytes`)
}

/** True when the request announces a body (a length above 0 or chunked transfer). */
export function hasBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length']
  if (length !== undefined) return Number(length) > 0
  return req.headers['transfer-encoding'] !== undefined
}

const UTF8 = new TextDecoder('utf-8', { fatal: true })

/**
 * Read a JSON body. An empty body gives `undefined` when `optional`; otherwise the body must be
 * `application/json` in UTF-8 (415), valid UTF-8 and JSON (400 INVALID_JSON), and, unless
 * `exactNumbers` is false (a body nothing reads the numbers of), hold no number that JSON.parse
 * would silently change (400 VALIDATION_FAILED, see checkNumbers).
 */
export async function readJson(req: IncomingMessage, { optional = false, exactNumbers = true } = {}): Promise<unknown> {
  // Only a Content-Length above 0 says a body is there. Anything else (none, or chunked, which may
  // still turn out empty) is read before anyone asks what it is, so an empty body is answered the
  // same whichever framing and type the client chose.
  const lengthAnnounced = hasBody(req) && req.headers['content-length'] !== undefined
  const raw = lengthAnnounced ? undefined : await readRaw(req)
  if (raw?.length === 0) {
    if (optional) return undefined
    // No body at all is no JSON, whatever type it claims (not 415: there is no media to refuse).
    throw new HttpError(400, 'INVALID_JSON', 'the request needs a JSON body')
  }
  const problem = jsonTypeProblem(req)
  if (problem) throw new HttpError(415, 'UNSUPPORTED_MEDIA_TYPE', problem)
  const bytes = raw ?? (await readRaw(req))
  let text: string
  try {
    text = UTF8.decode(bytes)
  } catch {
    throw new HttpError(400, 'INVALID_JSON', 'body is not valid UTF-8')
  }
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    throw new HttpError(400, 'INVALID_JSON', 'body is not valid JSON')
  }
  if (exactNumbers) checkNumbers(text)
  return value
}

/** Check `value` against a compiled schema; 400 VALIDATION_FAILED with `details` on failure. */
export function check<T extends TSchema>(schema: Validator<{}, T>, value: unknown): Static<T> {
  if (schema.Check(value)) return value as Static<T>
  // TypeBox reports each key an object does not allow as a `boolean` error ("schema is false") on
  // that key, beside one `additionalProperties` error on the object, and stops after a few errors:
  // a body with 100 extra keys would report only the former, which, dropped, leave `details` empty. Each
  // becomes its object's "must not have additional properties", listed once.
  // A pattern is worded by its schema's `description` ("must be an integer from 1 to 100"), not
  // shown as the regular expression; so is a union that has one ("must be a JSON object, or no
  // body"), in place of an error for each of its branches ("must be undefined", "must be object").
  const errors = [...schema.Errors(value)]
  const described = (e: (typeof errors)[number]): string | undefined =>
    e.keyword === 'pattern' || e.keyword === 'anyOf' ? describedAt(schema.Type(), e.schemaPath) : undefined
  const describedUnions = errors.filter((e) => e.keyword === 'anyOf' && described(e) !== undefined).map((e) => `${e.schemaPath}/anyOf/`)
  const details: { path: string; message: string }[] = []
  for (const e of errors) {
    if (describedUnions.some((union) => e.schemaPath.startsWith(union))) continue
    const extra = e.keyword === 'boolean'
    const at = extra ? e.instancePath.slice(0, e.instancePath.lastIndexOf('/')) : e.instancePath
    const wording = described(e)
    const message = extra ? 'must not have additional properties' : wording ? `must be ${wording}` : e.message
    const detail = { path: at === '' ? '/' : at, message }
    if (!details.some((d) => d.path === detail.path && d.message === detail.message)) details.push(detail)
  }
  throw new HttpError(400, 'VALIDATION_FAILED', 'request does not match the schema', details.slice(0, 10))
}

/** The `description` of the schema a `#/properties/…` pointer names, if it has one. */
function describedAt(root: unknown, pointer: string): string | undefined {
  let node = root as Record<string, unknown> | undefined
  for (const part of pointer.split('/').slice(1)) node = node?.[part.replaceAll('~1', '/').replaceAll('~0', '~')] as Record<string, unknown> | undefined
  return typeof node?.description === 'string' ? node.description : undefined
}

const IgnoredBody = Compile(Type.Union([Type.Undefined(), Type.Object({})], { description: 'a JSON object, or no body' }))

/**
 * The body of an endpoint that takes none (guest, logout, launch, a terminal ticket): empty, or a
 * JSON object whose keys are ignored, numbers and all; any other JSON is 400 (CONTRACT §3).
 */
export async function readIgnoredBody(req: IncomingMessage): Promise<void> {
  check(IgnoredBody, await readJson(req, { optional: true, exactNumbers: false }))
}

/** Read a JSON body and check it against a schema in one step. */
export async function readBody<T extends TSchema>(req: IncomingMessage, schema: Validator<{}, T>): Promise<Static<T>> {
  return check(schema, await readJson(req))
}
