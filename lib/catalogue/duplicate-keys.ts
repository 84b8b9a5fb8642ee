import { jsonPath } from './problems.js'

/** An object or array being read: its JSONPath, and the key (or index) of the value being read in it. */
interface Frame {
  path: string
  keys: Set<string> | null
  at: string | number
  /** In an object: the next string is a key. */
  expectKey: boolean
}

/**
 * The JSONPath of every key that appears again in its object, in text that has parsed. JSON.parse
 * keeps the last copy and drops the others unread, so a manifest saying `"status": "bogus"` and
 * then `"status": "available"` would pass validation and not be served as written (CONTRACT §5).
 */
export function duplicateKeys(text: string): string[] {
  const found: string[] = []
  const stack: Frame[] = []
  const childPath = (): string => {
    const top = stack.at(-1)
    return top === undefined ? '$' : jsonPath(top.path, top.at)
  }
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === 0x7b || c === 0x5b) {
      // `{` or `[`: a container, the value of its parent's current key or index.
      stack.push({ path: childPath(), keys: c === 0x7b ? new Set() : null, at: 0, expectKey: c === 0x7b })
    } else if (c === 0x7d || c === 0x5d) {
      stack.pop()
    } else if (c === 0x2c) {
      const top = stack.at(-1)!
      if (top.keys) top.expectKey = true
      else top.at = (top.at as number) + 1
    } else if (c === 0x22) {
      const start = i
      for (i++; text.charCodeAt(i) !== 0x22; i++) if (text.charCodeAt(i) === 0x5c) i++
      const top = stack.at(-1)
      if (top?.keys && top.expectKey) {
        const key = JSON.parse(text.slice(start, i + 1)) as string
        top.at = key
        top.expectKey = false
        if (top.keys.has(key)) found.push(jsonPath(top.path, key))
        top.keys.add(key)
      }
    }
  }
  return found
}
