import t from 'tap'
import { startPlatform } from './helpers/platform.js'
import { jsonOf, rawRequest } from './helpers/raw-http.js'

// CONTRACT §2 on the real platform: the Origin check of every state-changing method, and the
// preflight a platform origin needs before each of them.
const ORIGIN = 'https://play.example.com'
const platform = await startPlatform({ env: { PLATFORM_ORIGINS: `${ORIGIN},http://127.0.0.1:3000` } })
t.teardown(() => platform.stop())


t.test('DELETE and PATCH from a foreign Origin are 403 FORBIDDEN_ORIGIN, as POST and PUT are, before any route is looked up', async (t) => {
  for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
    for (const origin of ['https://evil.example', 'null', 'https://PLAY.example.com', `${ORIGIN}/`]) {
      const res = await rawRequest(platform.url, method, '/api/auth/session', { origin })
      t.equal(res.status, 403, `${method} from ${origin}`)
      t.strictSame(jsonOf(res), { error: 'origin not allowed', code: 'FORBIDDEN_ORIGIN' }, `${method} from ${origin}: body`)
      t.equal(res.headers['access-control-allow-origin'], undefined, `${method} from ${origin}: no CORS headers`)
      t.equal(res.headers['vary'], 'Origin')
    }
    // The same request from a platform origin reaches the router: the path has GET only.
    const allowed = await rawRequest(platform.url, method, '/api/auth/session', { origin: ORIGIN })
    t.equal(allowed.status, 405, `${method} from a platform origin`)
    t.strictSame(jsonOf(allowed), { error: `${method} not allowed`, code: 'METHOD_NOT_ALLOWED' })
    t.equal(allowed.headers['allow'], 'GET, HEAD')
    t.equal(allowed.headers['access-control-allow-origin'], ORIGIN)
  }
})

t.test('a foreign state-changing request to a path no route serves is 403 too, not 404: the Origin check comes first', async (t) => {
  for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
    const api = await rawRequest(platform.url, method, '/api/no-such-endpoint', { origin: 'https://evil.example' })
    t.equal(api.status, 403, `${method} /api/no-such-endpoint`)
    t.strictSame(jsonOf(api), { error: 'origin not allowed', code: 'FORBIDDEN_ORIGIN' }, `${method} /api/no-such-endpoint: body`)
    t.equal(api.headers['vary'], 'Origin')
    const page = await rawRequest(platform.url, method, '/no-such-page', { origin: 'https://evil.example' })
    t.equal(page.status, 403, `${method} /no-such-page`)
    t.match(page.headers['content-type'], /^text\/html/)
    t.match(page.body.toString(), /403 origin not allowed/)
    // The same request from a platform origin is the router's 404.
    const allowed = await rawRequest(platform.url, method, '/api/no-such-endpoint', { origin: ORIGIN })
    t.equal(allowed.status, 404, `${method} from a platform origin`)
    t.equal((jsonOf(allowed) as { code: string }).code, 'NOT_FOUND')
  }
})

t.test('a page route refuses a foreign state-changing request too: 403 before its 405, as HTML', async (t) => {
  const res = await rawRequest(platform.url, 'DELETE', '/dev/terminal', { origin: 'https://evil.example' })
  t.equal(res.status, 403)
  t.match(res.headers['content-type'], /^text\/html/)
  t.match(res.body.toString(), /403 origin not allowed/)
})

t.test('a preflight from a platform origin allows every method the API uses (PUT for the rename, DELETE)', async (t) => {
  for (const [method, path] of [['PUT', '/api/user/username'], ['POST', '/api/leaderboards/submit'], ['DELETE', '/api/auth/session']] as const) {
    const res = await rawRequest(platform.url, 'OPTIONS', path, { origin: ORIGIN, 'access-control-request-method': method, 'access-control-request-headers': 'content-type' })
    t.equal(res.status, 204, `${method} ${path}`)
    t.equal(res.body.length, 0)
    t.equal(res.headers['access-control-allow-origin'], ORIGIN)
    t.equal(res.headers['access-control-allow-credentials'], 'true')
    t.equal(res.headers['access-control-allow-headers'], 'content-type')
    t.same(res.headers['access-control-allow-methods']?.split(/,\s*/).sort(), ['DELETE', 'GET', 'HEAD', 'OPTIONS', 'POST', 'PUT'], `${method} ${path}: methods`)
    t.equal(res.headers['vary'], 'Origin')
  }
})

t.test('a preflight from a platform origin that names no request headers is 204 too, allowing Content-Type', async (t) => {
  const res = await rawRequest(platform.url, 'OPTIONS', '/api/auth/logout', { origin: ORIGIN, 'access-control-request-method': 'POST' })
  t.equal(res.status, 204)
  t.equal(res.body.length, 0)
  t.equal(res.headers['access-control-allow-origin'], ORIGIN)
  t.equal(res.headers['access-control-allow-headers'], 'Content-Type')
})
