import type { IncomingMessage, ServerResponse } from 'node:http'
import { noneMatchHits } from '../http/etag.js'
import type { Representation, Variant } from './serialize.js'

// Preference among equal q-values: smallest bytes first.
const ORDER = ['br', 'gzip', 'identity'] as const

/**
 * Pick the variant for an Accept-Encoding header (RFC 9110 §12.5.3): the coding with the highest
 * q, `*` standing for codings not named, identity acceptable unless refused. When everything is
 * refused, identity anyway: a 406 helps no client of a JSON API.
 */
function pickVariant(rep: Representation, accept: string | undefined): Variant {
  if (accept === undefined || accept === '') return rep.identity
  let coding = chosen.get(accept)
  if (coding === undefined) {
    // Clients send a handful of distinct headers: remember the choice for each.
    if (chosen.size >= 256) chosen.clear()
    chosen.set(accept, (coding = choose(accept)))
  }
  return rep[coding]
}

const chosen = new Map<string, Coding>()
type Coding = (typeof ORDER)[number]

function choose(accept: string): Coding {
  const q = new Map<string, number>()
  for (const part of accept.split(',')) {
    const [name, ...params] = part.split(';')
    const coding = name!.trim().toLowerCase()
    if (coding === '') continue
    let weight = 1
    for (const param of params) {
      const [key, value] = param.split('=')
      if (key?.trim().toLowerCase() === 'q') weight = Number(value?.trim())
    }
    q.set(coding === 'x-gzip' ? 'gzip' : coding, Number.isFinite(weight) ? weight : 0)
  }
  const star = q.get('*')
  let best: Coding = 'identity'
  let bestQ = 0
  for (const coding of ORDER) {
    const weight = q.get(coding) ?? (coding === 'identity' ? (star === 0 ? 0 : 0.001) : star ?? 0)
    if (weight > bestQ) {
      best = coding
      bestQ = weight
    }
  }
  return best
}

/**
 * Answer with the variant of `rep` the request accepts, or 304 when its If-None-Match names any of
 * them (each encoding stands for the same content). `vary` names Accept-Encoding and any header
 * the caller's answer depends on too. HEAD: node sends the headers, Content-Length included.
 */
export function replyNegotiated(
  req: IncomingMessage,
  res: ServerResponse,
  rep: Representation,
  answer: { type: string; vary: string; cacheControl: string },
): void {
  const variant = pickVariant(rep, req.headers['accept-encoding'])
  // One flat header list for writeHead: the server's response class adds X-Request-Id to it.
  const headers = ['vary', answer.vary, 'etag', variant.etag, 'cache-control', answer.cacheControl]
  if (noneMatchHits(req.headers['if-none-match'], rep.tags)) {
    res.writeHead(304, headers).end()
    return
  }
  headers.push('content-type', answer.type, 'content-length', variant.length)
  if (variant.encoding !== 'identity') headers.push('content-encoding', variant.encoding)
  res.writeHead(200, headers).end(req.method === 'HEAD' ? undefined : variant.body)
}
