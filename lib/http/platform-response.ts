import http from 'node:http'
import { headerLines } from './header-lines.js'
import type { Exchange } from './server.js'

/**
 * A response that carries X-Request-Id and `X-Content-Type-Options: nosniff` on every answer, and
 * `Vary: Origin` on every API answer (CONTRACT §2), however a handler writes its head. nosniff: a
 * browser takes each answer as the type it is labelled, never a JSON body with a user's name in it
 * as a page or a script. A handler may pass its headers to writeHead as one flat array: with
 * nothing set before, Node then writes them without building a header map, which the catalogue's
 * hot path relies on (setHeader per header cost it a tenth of its rate).
 */
export class PlatformResponse extends http.ServerResponse {
  /**
   * The request this answers, set before any handler runs. A declared field, not a property added
   * per response: a late addition would give responses two shapes and slow Node's own code on them.
   */
  exchange: Exchange | null = null

  get requestId(): string {
    return this.exchange?.requestId ?? ''
  }

  get api(): boolean {
    return this.exchange?.api ?? false
  }

  override writeHead(statusCode: number, reason?: unknown, headers?: unknown): this {
    const given = typeof reason === 'string' ? headers : reason
    if (Array.isArray(given) && (given.length === 0 || typeof given[0] === 'string')) {
      // The list is the handler's own, made for this answer: extended in place, not copied.
      // A flat list is made by the platform's own hot paths, which leave these two fields to this.
      given.push('x-request-id', this.requestId, 'x-content-type-options', 'nosniff')
      if (this.api && headerLines(given, 'vary') === 0) given.push('vary', 'Origin')
      return typeof reason === 'string'
        ? super.writeHead(statusCode, reason, given as string[])
        : super.writeHead(statusCode, given as string[])
    }
    if (!this.hasHeader('x-request-id')) this.setHeader('x-request-id', this.requestId)
    if (!this.hasHeader('x-content-type-options')) this.setHeader('x-content-type-options', 'nosniff')
    const object = given as Record<string, unknown> | undefined
    if (this.api && !this.hasHeader('vary') && !(object && ('vary' in object || 'Vary' in object))) this.setHeader('vary', 'Origin')
    return super.writeHead(statusCode, reason as string, headers as http.OutgoingHttpHeaders)
  }
}
