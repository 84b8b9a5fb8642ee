import type { IncomingMessage } from 'node:http'
import contentType from 'content-type'
import { headerLines } from './header-lines.js'

/**
 * Why the request's body is not JSON in UTF-8, or null when it is: not content-encoded, and `application/json`,
 * with no charset or charset=utf-8 (JSON text is UTF-8, RFC 8259 §8.1; a Latin-1 body would be
 * read wrongly). Empty parameters, as in `application/json;`, are allowed (RFC 9110 §5.6.6).
 */
export function jsonTypeProblem(req: IncomingMessage): string | null {
  // A compressed body (Content-Encoding: gzip) is media in a coding not accepted (RFC 9110 §8.4.1).
  const coding = req.headers['content-encoding']?.trim().toLowerCase()
  if (coding !== undefined && coding !== '' && coding !== 'identity') return 'a JSON body must not be content-encoded (no Content-Encoding)'
  // Node's parser takes off only the chunking of `Transfer-Encoding: gzip, chunked`: the gzip would be read as JSON.
  const transfer = req.headers['transfer-encoding']
  if (transfer !== undefined && transfer.trim().toLowerCase() !== 'chunked') return 'a JSON body must not be transfer-coded other than chunked'
  // Node keeps the first of two Content-Type lines; a proxy before it may have read the last.
  if (headerLines(req.rawHeaders, 'content-type') > 1) return 'the Content-Type header is repeated'
  const header = req.headers['content-type']
  // The content-type package keeps the last of two charsets; another reader may keep the first.
  if (header !== undefined && header.split(';').filter((part) => /^\s*charset\s*=/i.test(part)).length > 1) return 'the charset parameter is repeated'
  let parsed: contentType.ParsedMediaType | null = null
  try {
    if (header !== undefined) parsed = contentType.parse(withoutEmptyParameters(header))
  } catch {
    parsed = null
  }
  if (parsed?.type !== 'application/json') return 'body must be application/json'
  const charset = parsed.parameters.charset?.toLowerCase()
  return charset === undefined || charset === 'utf-8' || charset === 'utf8' ? null : 'a JSON body must be UTF-8 (charset=utf-8 or none)'
}

/**
 * The media type with its empty parameters left out (`application/json;`, `a/b;;c=d`), which the
 * content-type package refuses. Split, not a regular expression: `(\s*;)+\s*$` took quadratic
 * time on a header of many semicolons (1.5 s for 15 KB, the event loop blocked throughout).
 */
function withoutEmptyParameters(header: string): string {
  return header.split(';').filter((part, i) => i === 0 || part.trim() !== '').join(';')
}
