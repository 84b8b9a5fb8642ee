import { check, readBody } from '../http/body.js'
import { invalidField } from '../http/errors.js'
import { queryParam } from '../http/target.js'
import { decodeCanonical } from '../signed.js'
import { leaderboardNotFound } from '../backend/refusals.js'
import { json, NO_STORE } from '../http/reply.js'
import type { RouteContext, Router } from '../http/router.js'
import type { LeaderboardRecord } from '../backend/backend.js'
import type { App } from './app.js'
import { floodGuard } from './flood-guard.js'
import { LeaderboardQuery, SubmitBody } from './schemas.js'

/** CONTRACT §3: metadata is at most 2 KiB as UTF-8 JSON text. */
const MAX_METADATA_BYTES = 2048
// Deeper metadata is refused whatever its size, so a deep body never reaches the recursive JSON.stringify.
const MAX_METADATA_DEPTH = 32
const DEFAULT_LIMIT = 20

/** `POST /api/leaderboards/submit` and `GET /api/leaderboards/{id}` (spec 2.5, CONTRACT §3). */
export function leaderboardRoutes(router: Router, app: App): void {
  const flood = floodGuard('submissions')

  router.add('POST', '/api/leaderboards/submit', async (ctx) => {
    const session = await app.auth.require(ctx)
    flood(session.uid, performance.now())
    const body = await readBody(ctx.req, SubmitBody)
    const metadata = body.metadata === undefined ? undefined : metadataText(body.metadata)
    requireBoard(app, body.leaderboardId)
    const write = { leaderboardId: body.leaderboardId, ownerId: session.uid, username: session.usn, score: body.score, subscore: body.subscore ?? 0, metadata }
    const record = await app.backend.writeRecord(write, app.now())
    json(ctx.res, 200, { success: true, record }, NO_STORE)
  })

  router.add('GET', '/api/leaderboards/:id', async (ctx: RouteContext) => {
    const id = ctx.params.id!
    const query = check(LeaderboardQuery, { limit: queryParam(ctx.url, 'limit'), cursor: queryParam(ctx.url, 'cursor') })
    requireBoard(app, id)
    // Only as issued, or with its padding (Nakama's cursors have it): no other spelling of the same bytes.
    if (query.cursor !== undefined && decodeCanonical(query.cursor, true) === null) throw invalidField('/cursor', 'cursor is not valid')
    const session = await app.auth.optional(ctx)
    const page = await app.backend.listRecords(
      { leaderboardId: id, limit: query.limit === undefined ? DEFAULT_LIMIT : Number(query.limit), cursor: query.cursor, ownerId: session?.uid },
      app.now(),
    )
    const ownRecord = page.ownRecord ? listed(page.ownRecord) : null
    json(ctx.res, 200, { success: true, records: page.records.map(listed), nextCursor: page.nextCursor, ownRecord }, NO_STORE)
  })
}

/** Only boards the catalogue declares now are served; a disabled game declares none (404). */
function requireBoard(app: App, id: string): void {
  if (!app.catalogue().leaderboards.has(id)) throw leaderboardNotFound(id)
}

/** A listed record: the fields CONTRACT §3 names for `records` and `ownRecord`. */
function listed(r: LeaderboardRecord): Pick<LeaderboardRecord, 'owner_id' | 'username' | 'score' | 'subscore' | 'rank'> {
  return { owner_id: r.owner_id, username: r.username, score: r.score, subscore: r.subscore, rank: r.rank }
}

/**
 * Metadata as stored: the object JSON.parse made (keys such as `__proto__` are own data
 * properties there, never merged into anything) serialized back, at most 2 KiB.
 */
function metadataText(value: Record<string, unknown>): string {
  if (depth(value, 0) > MAX_METADATA_DEPTH) throw invalidField('/metadata', `metadata is nested deeper than ${MAX_METADATA_DEPTH} levels`)
  const text = JSON.stringify(value)
  if (Buffer.byteLength(text, 'utf8') > MAX_METADATA_BYTES) throw invalidField('/metadata', `metadata is larger than ${MAX_METADATA_BYTES} bytes as JSON`)
  return text
}

/** Nesting depth of a parsed JSON value, giving up once past the limit. */
function depth(value: unknown, level: number): number {
  if (level > MAX_METADATA_DEPTH || value === null || typeof value !== 'object') return level
  let deepest = level + 1
  for (const child of Object.values(value)) {
    deepest = Math.max(deepest, depth(child, level + 1))
    if (deepest > MAX_METADATA_DEPTH) break
  }
  return deepest
}
