import { replyNegotiated } from '../catalogue/negotiate.js'
import { readIgnoredBody } from '../http/body.js'
import { HttpError } from '../http/errors.js'
import { noSession } from '../backend/refusals.js'
import { html, json, NO_STORE } from '../http/reply.js'
import type { Router } from '../http/router.js'
import { loadSecret } from '../secrets.js'
import { mintTicket } from '../ticket.js'
import type { App } from './app.js'
import { checkDevGate } from './dev-gate.js'
import { assetContent, ASSETS, loadTerminalAssets, PAGE_HEADERS, refusalPage, terminalPage } from './terminal-html.js'

/** GET /dev/terminal, POST /dev/terminal/ticket and the page's assets (CONTRACT §3). */
export function terminalRoutes(router: Router, app: App): void {
  const ticketKeys = loadSecret(app.config.dataDir, 'terminal-ticket-secret', app.config.ticketSecret)
  loadTerminalAssets()

  router.add('GET', '/dev/terminal', async (ctx) => {
    const gate = await checkDevGate(app, ctx)
    if (!gate.admitted) return html(ctx.res, gate.status, refusalPage(gate.status, gate.reason), PAGE_HEADERS)
    html(ctx.res, 200, terminalPage(), PAGE_HEADERS)
  })

  router.add('POST', '/dev/terminal/ticket', async (ctx) => {
    // The gate first, as launch checks its session first: a client that may not have a ticket
    // hears so whatever it sends, and its body is not read.
    const gate = await checkDevGate(app, ctx)
    if (!gate.admitted) {
      throw gate.status === 401 ? noSession() : new HttpError(403, 'FORBIDDEN', 'developer access required')
    }
    // No body, or `{}`: anything else gets the JSON body errors of CONTRACT §4 (415, 400, 413).
    await readIgnoredBody(ctx.req)
    const { ticket, claims } = mintTicket(ticketKeys, gate.user, app.now())
    json(ctx.res, 200, { success: true, ticket, expiresAt: new Date(claims.expiresAt).toISOString() }, NO_STORE)
  })

  router.add('GET', '/dev/terminal/assets/:name', (ctx) => {
    const asset = Object.hasOwn(ASSETS, ctx.params.name!) ? ASSETS[ctx.params.name!]! : null
    if (!asset) throw new HttpError(404, 'NOT_FOUND', 'no such asset')
    const { rep, version } = assetContent(asset.file)
    replyNegotiated(ctx.req, ctx.res, rep, {
      type: `${asset.type}; charset=utf-8`,
      vary: 'Accept-Encoding',
      // The URL the page names carries the content's version: that one never changes. Any other
      // (no version, or one from before an upgrade) is checked again at each use.
      cacheControl: ctx.url.searchParams.get('v') === version ? 'public, max-age=31536000, immutable' : 'no-cache',
    })
  })
}
