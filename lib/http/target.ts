// The path of a request target, taken without a URL parse where the parse would change nothing.

import { invalidField } from './errors.js'

const URL_BASE = 'http://platform.invalid'
/** Paths of characters WHATWG URL parsing keeps as they are: letters, digits and `-._~!$&'()*+,;=:@/|^[]`. */
const PLAIN_PATH = /^\/[\w\-.~!$&'()*+,;=:@/|^[\]]*$/

/**
 * The path of a request target, as new URL(target).pathname would give it, or null for a target
 * no URL can be made of (`http://[/`). A path URL parsing would change (dot segments, backslashes,
 * percent escapes, `//`, characters it escapes) goes through new URL; every other path is used as
 * written, which saves a parse per request.
 */
export function pathnameOf(target: string): string | null {
  const q = target.indexOf('?')
  const path = q < 0 ? target : target.slice(0, q)
  if (PLAIN_PATH.test(path) && path.charCodeAt(1) !== 0x2f && !path.includes('/.')) return path
  // URL parsing escapes every character JSON would, but keeps a backslash in the path of a scheme
  // it does not know (`foo://x/a\`): escaped too, the access log writes every path as it is.
  return parseTarget(target)?.pathname.replaceAll('\\', '%5C') ?? null
}

/**
 * The request target as a URL, or null when it is none: llhttp lets through absolute forms URL
 * parsing refuses, and a throw here would end the process. A target starting with `/` is a path,
 * `//evil.example/x` included: new URL(target, base) would read that one as a host and the path
 * `/x`, so the base is prefixed as text. Other targets (absolute URLs, `*`) are resolved against
 * the base.
 */
export function parseTarget(target: string): URL | null {
  try {
    return target.charCodeAt(0) === 0x2f ? new URL(URL_BASE + target) : new URL(target, URL_BASE)
  } catch {
    return null
  }
}

/**
 * A query parameter given at most once: a repeated one is 400, since which copy counts is
 * ambiguous (`limit=2&limit=500` would otherwise pass its check on the first and drop the second).
 */
export function queryParam(url: URL, name: string): string | undefined {
  const values = url.searchParams.getAll(name)
  if (values.length > 1) {
    throw invalidField(`/${name}`, `the query parameter ${name} is given more than once`, 'must be given at most once')
  }
  return values[0]
}
