/**
 * Whether If-None-Match names a current representation: `*`, or any listed entity tag (W/ or not:
 * the comparison is weak, RFC 9110 §13.1.2) whose opaque part, quotes removed, is in `current`.
 */
export function noneMatchHits(ifNoneMatch: string | undefined, current: ReadonlySet<string>): boolean {
  if (ifNoneMatch === undefined) return false
  for (const raw of ifNoneMatch.split(',')) {
    const tag = raw.trim()
    if (tag === '*') return true
    const opaque = tag.startsWith('W/') ? tag.slice(2) : tag
    if (opaque.length >= 2 && opaque.startsWith('"') && opaque.endsWith('"') && current.has(opaque.slice(1, -1))) return true
  }
  return false
}
