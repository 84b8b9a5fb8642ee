/** One error type for the whole API: a status, a machine code and a message (CONTRACT §4). */
export class HttpError extends Error {
  override name = 'HttpError'
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: unknown,
    readonly headers?: Record<string, string>,
  ) {
    super(message)
  }
}

/** 429 RATE_LIMITED with `Retry-After` in whole seconds (at least 1). */
export function rateLimited(message: string, waitMs: number): HttpError {
  const seconds = Math.max(1, Math.ceil(waitMs / 1000))
  return new HttpError(429, 'RATE_LIMITED', message, undefined, { 'retry-after': String(seconds) })
}

/** 400 VALIDATION_FAILED about one field, with its `details` entry (`detail` words it for the field). */
export function invalidField(path: string, message: string, detail = message): HttpError {
  return new HttpError(400, 'VALIDATION_FAILED', message, [{ path, message: detail }])
}

/**
 * The client closed its connection before work for it began. Never seen by anyone: there is no
 * one left to answer (the access log gives the request nginx's 499, "client closed request").
 */
export function clientClosed(): HttpError {
  return new HttpError(499, 'CLIENT_CLOSED', 'the client closed the connection')
}
