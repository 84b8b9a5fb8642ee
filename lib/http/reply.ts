import type { ServerResponse } from 'node:http'
import { HttpError } from './errors.js'

/** For answers about one user (sessions, tokens, tickets): never kept by a cache. */
export const NO_STORE: Readonly<Record<string, string>> = Object.freeze({ 'cache-control': 'no-store' })

/** Send `data` as JSON with the given status. */
export function json(res: ServerResponse, status: number, data: unknown, headers: Readonly<Record<string, string>> = {}): void {
  const body = JSON.stringify(data)
  res.writeHead(status, {
    ...headers,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
  })
  res.end(body)
}

/** Send an HTML page (pages answer HTML, CONTRACT §4). */
export function html(res: ServerResponse, status: number, page: string, headers: Readonly<Record<string, string>> = {}): void {
  res.writeHead(status, {
    ...headers,
    'content-type': 'text/html; charset=utf-8',
    'content-length': Buffer.byteLength(page),
  })
  res.end(page)
}

/** Escape text for HTML element content and attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
}

/** Turn any thrown value into the contract's error body; never leak a stack (CONTRACT §4). */
export function toHttpError(err: unknown): HttpError {
  if (err instanceof HttpError) return err
  return new HttpError(500, 'INTERNAL', 'internal error')
}

/** Render an error as JSON `{error, code[, details]}` (API) or as a small HTML page. */
export function sendError(res: ServerResponse, err: HttpError, asHtml: boolean): void {
  if (res.headersSent) {
    res.destroy()
    return
  }
  if (asHtml) {
    const title = `${err.status} ${escapeHtml(err.message)}`
    // A long path in the message wraps on a phone rather than widening the page; the empty icon
    // keeps a browser from asking for /favicon.ico, another 404.
    html(res, err.status, `<!doctype html><html lang="en"><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><link rel="icon" href="data:,"><title>${title}</title><h1 style="overflow-wrap: anywhere">${title}</h1>\n`, err.headers)
    return
  }
  const body: Record<string, unknown> = { error: err.message, code: err.code }
  if (err.details !== undefined) body.details = err.details
  json(res, err.status, body, err.headers)
}
