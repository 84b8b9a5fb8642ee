import { replyNegotiated } from '../catalogue/negotiate.js'
import { readBody, readIgnoredBody } from '../http/body.js'
import { HttpError, invalidField } from '../http/errors.js'
import { noSession } from '../backend/refusals.js'
import { html, json, NO_STORE } from '../http/reply.js'
import type { Router } from '../http/router.js'
import { loadSecret } from '../secrets.js'
import { accessProof, isBridgeCredential, mintTicket, readTicket } from '../ticket.js'
import type { PlatformConfig } from '../config.js'
import type { App } from './app.js'
import { admitUser, checkDevGate } from './dev-gate.js'
import { AccessBody } from './schemas.js'
import { assetContent, ASSETS, loadTerminalAssets, PAGE_HEADERS, refusalPage, terminalPage } from './terminal-html.js'

/** TERMINAL_TICKET_SECRET's keys, or the secret in DATA_DIR the platform and the bridge share (made at the first start). */
export function terminalTicketKeys(config: Pick<Readonly<PlatformConfig>, 'dataDir' | 'ticketSecret'>): string[] {
  return loadSecret(config.dataDir, 'terminal-ticket-secret', config.ticketSecret)
}

/** GET /dev/terminal, POST /dev/terminal/ticket and the page's assets (CONTRACT §3); the bridge's POST /dev/terminal/access. */
export function terminalRoutes(router: Router, app: App): void {
  const ticketKeys = app.ticketKeys
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
    const { ticket, claims } = mintTicket(ticketKeys, gate.user, app.auth.reference(gate.session), app.now())
    json(ctx.res, 200, { success: true, ticket, expiresAt: new Date(claims.expiresAt).toISOString() }, NO_STORE)
  })

  // The bridge asks, for each open terminal every TERMINAL_ACCESS_CHECK_S, whether its user would
  // still get the ticket it opened with: the session it was minted in still active (not logged
  // out), and the gate still open to the user (a role revoked, DEV_ACCESS_USERS changed). Only the
  // bridge may ask: its credential is derived from the ticket secret; and the answer carries a
  // proof over the bridge's challenge under the same secret, which only this platform can give.
  router.add('POST', '/dev/terminal/access', async (ctx) => {
    const bearer = /^Bearer ([A-Za-z0-9_-]{1,100})$/.exec(ctx.req.headers.authorization ?? '')?.[1]
    if (!bearer || !isBridgeCredential(ticketKeys, bearer)) throw new HttpError(403, 'FORBIDDEN', 'the terminal bridge\'s credential is required')
    const { ticket, challenge } = await readBody(ctx.req, AccessBody)
    const claims = readTicket(ticketKeys, ticket)
    if (!claims) throw invalidField('/ticket', 'not a ticket this platform signed', 'must be a ticket this platform signed')
    // Short reasons: the bridge closes the connection with one (a close reason holds 123 bytes).
    const reason = !(await app.auth.referenceActive(claims.session, claims.userId)) ? 'signed out'
      : !(await admitUser(app, { id: claims.userId, username: claims.username })).admitted ? 'developer access revoked'
      : null
    const proof = accessProof(ticketKeys, challenge, ticket, reason)
    json(ctx.res, 200, reason === null ? { success: true, admitted: true, proof } : { success: true, admitted: false, reason, proof }, NO_STORE)
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
