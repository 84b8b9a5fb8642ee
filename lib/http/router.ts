import type { IncomingMessage, ServerResponse } from 'node:http'

/** What a handler gets: the request, the response, decoded path params and the parsed URL. */
export interface RouteContext {
  req: IncomingMessage
  res: ServerResponse
  params: Record<string, string>
  url: URL
  /** The client's address: the peer, or X-Forwarded-For's when the peer is a trusted proxy. */
  ip: string
  /** 'https' when a trusted proxy says the client used TLS. */
  proto: 'http' | 'https'
  /** The X-Request-Id of this request. */
  requestId: string
}

type Handler = (ctx: RouteContext) => unknown

interface Route {
  method: string
  segments: string[]
  handler: Handler
}

/** The outcome of matching a path: a handler, or the methods the path allows (405), or nothing (404). */
type Match =
  | { kind: 'found'; handler: Handler; params: Record<string, string> }
  | { kind: 'method'; allow: string[] }
  | { kind: 'none' }

/** The params of a route without parameters: one frozen empty object for every request. */
export const NO_PARAMS: Record<string, string> = Object.freeze(Object.create(null))
const NONE: Match = Object.freeze({ kind: 'none' })

/**
 * A table of method + path (`:param` segments) -> handler, as trouter keeps it. Paths without
 * parameters are looked up in a map first (find-my-way does the same): the catalogue's hot path
 * then neither splits the path nor allocates; parameter routes are matched segment by segment.
 */
export class Router {
  /** path -> method -> its match, made once, for routes without parameters. */
  readonly #static = new Map<string, Map<string, Match>>()
  readonly #dynamic: Route[] = []

  /** Add a route; `path` segments starting with `:` capture one decoded segment. */
  add(method: string, path: string, handler: Handler): this {
    const segments = path.split('/').slice(1)
    if (segments.some((s) => s.startsWith(':'))) {
      this.#dynamic.push({ method, segments, handler })
    } else {
      let methods = this.#static.get(path)
      if (!methods) this.#static.set(path, (methods = new Map()))
      if (!methods.has(method)) methods.set(method, Object.freeze({ kind: 'found', handler, params: NO_PARAMS }))
    }
    return this
  }

  /**
   * Find the handler for `method` and `pathname`. HEAD falls back to GET. A path with routes of
   * its own is that resource whatever the method (find-my-way's static first): GET of
   * `/api/leaderboards/submit` is 405, not a read of a board called "submit".
   */
  find(method: string, pathname: string): Match {
    const methods = this.#static.get(pathname)
    if (methods) {
      const found = methods.get(method) ?? (method === 'HEAD' ? methods.get('GET') : undefined)
      if (found) return found
    }
    // Past the lookup of a fixed path's own method: the catalogue's hot path allocates nothing.
    const allow = new Set<string>()
    if (methods) {
      for (const m of methods.keys()) allowMethod(allow, m)
      return { kind: 'method', allow: [...allow].sort() }
    }
    if (this.#dynamic.length > 0) {
      const parts = pathname.split('/').slice(1)
      for (const route of this.#dynamic) {
        const params = matchSegments(route.segments, parts)
        if (!params) continue
        if (route.method === method || (method === 'HEAD' && route.method === 'GET')) {
          return { kind: 'found', handler: route.handler, params }
        }
        allowMethod(allow, route.method)
      }
    }
    return allow.size ? { kind: 'method', allow: [...allow].sort() } : NONE
  }
}

function allowMethod(allow: Set<string>, method: string): void {
  allow.add(method)
  if (method === 'GET') allow.add('HEAD')
}

function matchSegments(pattern: string[], parts: string[]): Record<string, string> | null {
  if (pattern.length !== parts.length) return null
  const params: Record<string, string> = Object.create(null)
  for (let i = 0; i < pattern.length; i++) {
    const want = pattern[i]!
    const got = parts[i]!
    if (want.startsWith(':')) {
      if (got === '') return null
      // A segment that is no valid percent-encoding (`%ff`) is kept as written: it still names
      // this route, and as an id it names nothing, which the handler answers (GAME_NOT_FOUND).
      let value: string
      try {
        value = decodeURIComponent(got)
      } catch {
        value = got
      }
      params[want.slice(1)] = value
    } else if (want !== got) {
      return null
    }
  }
  return params
}
