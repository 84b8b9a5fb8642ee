import { HttpError } from '../http/errors.js'

/** 400 for an `incr` that would carry the stored score or subscore past 2^53-1 (CONTRACT §3), naming which. */
export function overflow(field: 'score' | 'subscore'): HttpError {
  const message = `the stored ${field} would pass 2^53-1`
  return new HttpError(400, 'VALIDATION_FAILED', message, [{ path: `/${field}`, message }])
}
