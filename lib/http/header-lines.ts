/**
 * How many lines of a flat header list (name, value, name, value…: a request's `rawHeaders`, or a
 * list a handler passes to writeHead) name the field `lower` (a lower-case name), in any case.
 * Node keeps only the first line of some request headers (Host, Content-Type) and says nothing of
 * the others.
 */
export function headerLines(flat: readonly unknown[], lower: string): number {
  let lines = 0
  for (let i = 0; i < flat.length; i += 2) {
    const name = flat[i]
    if (typeof name === 'string' && name.length === lower.length && name.toLowerCase() === lower) lines++
  }
  return lines
}
