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
export type Match =
  | { kind: 'found'; handler: Handler; params: Record<string, string> }
  | { kind: 'method'; allow: string[] }
  | { kind: 'none' }

/** A table of method + path (`:param` segments) -> handler, as trouter keeps it. */
export class Router {
  readonly #routes: Route[] = []

  /** Add a route; `path` segments starting with `:` capture one decoded segment. */
  add(method: string, path: string, handler: Handler): this {
    this.#routes.push({ method, segments: path.split('/').slice(1), handler })
    return this
  }

  /** Find the handler for `method` and `pathname`. HEAD falls back to GET. */
  find(method: string, pathname: string): Match {
    const parts = pathname.split('/').slice(1)
    const allow = new Set<string>()
    for (const route of this.#routes) {
      const params = matchSegments(route.segments, parts)
      if (!params) continue
      if (route.method === method || (method === 'HEAD' && route.method === 'GET')) {
        return { kind: 'found', handler: route.handler, params }
      }
      allow.add(route.method)
      if (route.method === 'GET') allow.add('HEAD')
    }
    return allow.size ? { kind: 'method', allow: [...allow].sort() } : { kind: 'none' }
  }
}

function matchSegments(pattern: string[], parts: string[]): Record<string, string> | null {
  if (pattern.length !== parts.length) return null
  const params: Record<string, string> = Object.create(null)
  for (let i = 0; i < pattern.length; i++) {
    const want = pattern[i]!
    const got = parts[i]!
    if (want.startsWith(':')) {
      if (got === '') return null
      let value: string
      try {
        value = decodeURIComponent(got)
      } catch {
        return null
      }
      params[want.slice(1)] = value
    } else if (want !== got) {
      return null
    }
  }
  return params
}
