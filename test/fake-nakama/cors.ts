import type http from 'node:http'

// Nakama wraps its whole HTTP API in gorilla/handlers' CORS (server/api.go, StartApiServer):
// AllowedOrigins ["*"], AllowedHeaders Authorization, Content-Type and User-Agent (added to
// gorilla's defaults), AllowedMethods GET, HEAD, POST, PUT and DELETE (nakama-api.md §1.0).

const ALLOWED_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE']
/** gorilla's defaultCorsMethods: never listed in Access-Control-Allow-Methods. */
const SIMPLE_METHODS = ['GET', 'HEAD', 'POST']
/** gorilla's defaultCorsHeaders: allowed, never listed in Access-Control-Allow-Headers. */
const SIMPLE_HEADERS = ['Accept', 'Accept-Language', 'Content-Language', 'Origin']
const ALLOWED_HEADERS = [...SIMPLE_HEADERS, 'Authorization', 'Content-Type', 'User-Agent']

/** What the CORS handler does with a request: answer it alone, or pass it on with these headers. */
export type CorsOutcome = { answer: { status: number; headers: Record<string, string> } } | { headers: Record<string, string> }

/** Go's http.CanonicalHeaderKey: each dash-separated word capitalised. */
function canonical(name: string): string {
  return name.toLowerCase().replace(/(^|-)([a-z])/g, (_, dash: string, c: string) => dash + c.toUpperCase())
}

/** gorilla/handlers cors.ServeHTTP: a preflight is answered here with an empty body; other requests go on. */
export function cors(req: http.IncomingMessage): CorsOutcome {
  const origin = req.headers.origin
  // No Origin: not a CORS request. An OPTIONS then gets an empty 200 and nothing else.
  if (!origin) return req.method === 'OPTIONS' ? { answer: { status: 200, headers: {} } } : { headers: {} }
  if (req.method !== 'OPTIONS') return { headers: { 'access-control-allow-origin': '*' } }
  const method = req.headers['access-control-request-method']
  if (method === undefined) return { answer: { status: 400, headers: {} } }
  if (!ALLOWED_METHODS.includes(method)) return { answer: { status: 405, headers: {} } }
  const listed: string[] = []
  for (const name of String(req.headers['access-control-request-headers'] ?? '').split(',')) {
    const header = canonical(name.trim())
    if (header === '' || SIMPLE_HEADERS.includes(header)) continue
    if (!ALLOWED_HEADERS.includes(header)) return { answer: { status: 403, headers: {} } }
    listed.push(header)
  }
  const headers: Record<string, string> = {}
  if (listed.length) headers['access-control-allow-headers'] = listed.join(',')
  if (!SIMPLE_METHODS.includes(method)) headers['access-control-allow-methods'] = method
  headers['access-control-allow-origin'] = '*'
  return { answer: { status: 200, headers } }
}
