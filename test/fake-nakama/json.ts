import { FakeError } from './errors.js'

/**
 * A JSON number as written in the request, with where it stood: protojson reads int64 fields from
 * the token's text, so 9223372036854775807 stays exact, which JSON.parse (a double) cannot do.
 */
export class JsonNumber {
  constructor(readonly text: string, readonly at: string) {}
}

/** Where a value stood, protojson style ("line 1:10"), for the error messages that quote it. */
export const positions = new WeakMap<object, Map<string, string>>()

const INT64_MIN = -(2n ** 63n)
const INT64_MAX = 2n ** 63n - 1n
const NUMBER = /^-?(0|[1-9][0-9]*)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?$/

/**
 * Parse a request body the way protojson reads it for int64 fields: numbers keep their text
 * (JsonNumber), and the object's own keys remember the position of their values.
 */
export function parseKeepingNumbers(text: string): Record<string, unknown> {
  let i = 0
  const at = (): string => {
    const before = text.slice(0, i)
    const line = before.split('\n').length
    return `line ${line}:${i - before.lastIndexOf('\n')}`
  }
  const fail = (what: string): never => {
    throw new FakeError(3, `proto: syntax error (${at()}): ${what}`)
  }
  const space = () => {
    while (i < text.length && ' \t\r\n'.includes(text[i]!)) i++
  }
  const value = (): unknown => {
    space()
    const c = text[i]
    if (c === '{') {
      i++
      const out: Record<string, unknown> = {}
      const where = new Map<string, string>()
      space()
      if (text[i] === '}') {
        i++
        positions.set(out, where)
        return out
      }
      for (;;) {
        space()
        if (text[i] !== '"') fail('invalid value')
        const key = string()
        space()
        if (text[i++] !== ':') fail('expected ":"')
        space()
        where.set(key, at())
        out[key] = value()
        space()
        if (text[i] === ',') {
          i++
          continue
        }
        if (text[i++] === '}') break
        fail('expected "," or "}"')
      }
      positions.set(out, where)
      return out
    }
    if (c === '[') {
      i++
      const out: unknown[] = []
      space()
      if (text[i] === ']') {
        i++
        return out
      }
      for (;;) {
        out.push(value())
        space()
        if (text[i] === ',') {
          i++
          continue
        }
        if (text[i++] === ']') return out
        fail('expected "," or "]"')
      }
    }
    if (c === '"') return string()
    for (const [word, literal] of [['true', true], ['false', false], ['null', null]] as const) {
      if (text.startsWith(word, i)) {
        i += word.length
        return literal
      }
    }
    const where = at()
    const match = /^-?[0-9][0-9.eE+-]*/.exec(text.slice(i))
    if (!match || !NUMBER.test(match[0])) return fail('invalid value')
    i += match[0].length
    return new JsonNumber(match[0], where)
  }
  const string = (): string => {
    const start = i
    i++
    while (i < text.length && text[i] !== '"') i += text[i] === '\\' ? 2 : 1
    if (i >= text.length) fail('unexpected end of string')
    i++
    try {
      return JSON.parse(text.slice(start, i)) as string
    } catch {
      return fail('invalid string')
    }
  }
  if (text.trim() === '') return {}
  const out = value()
  space()
  if (i < text.length) fail('unexpected token after the value')
  if (out === null || typeof out !== 'object' || Array.isArray(out)) fail('expected an object')
  return out as Record<string, unknown>
}

/**
 * protojson's int64 input: a number or a string holding one; integral values such as 2.0 and 1e2
 * are taken, fractions and values outside int64 are 400 (nakama-api.md §1.0). Exact, as a bigint.
 */
export function int64Of(value: unknown, at = 'line 1:1'): bigint {
  if (value === undefined || value === null) return 0n
  const text = value instanceof JsonNumber ? value.text : typeof value === 'string' ? value.trim() === value ? value : '' : ''
  const where = value instanceof JsonNumber ? value.at : at
  const shown = value instanceof JsonNumber ? value.text : typeof value === 'string' ? JSON.stringify(value) : String(value)
  const invalid = () => new FakeError(3, `proto: (${where}): invalid value for int64 type: ${shown}`)
  const match = NUMBER.exec(text)
  if (!match) throw invalid()
  const [, whole, fraction = '', exponent = '0'] = match
  const sign = text.startsWith('-') ? -1n : 1n
  const digits = (whole! + fraction).replace(/^0+(?=.)/, '')
  const shift = Number(exponent) - fraction.length
  let result: bigint
  if (/^0+$/.test(digits)) result = 0n
  else if (shift >= 0) {
    if (digits.length + shift > 20) throw invalid()
    result = BigInt(digits) * 10n ** BigInt(shift)
  } else {
    const kept = digits.length + shift
    if (kept <= 0 || !/^0*$/.test(digits.slice(kept))) throw invalid()
    result = BigInt(digits.slice(0, kept))
  }
  result *= sign
  if (result < INT64_MIN || result > INT64_MAX) throw invalid()
  return result
}

/** A value's text as protojson quotes it in an error: the number as written, `true`, or the opening token. */
function rawText(value: unknown): string {
  if (value instanceof JsonNumber) return value.text
  if (Array.isArray(value)) return '['
  if (value !== null && typeof value === 'object') return '{'
  return String(value)
}

/**
 * A string field (or StringValue wrapper) of a body read by parseKeepingNumbers, as protojson reads
 * it: absent or null is unset (undefined); any value but a string is 400 with its position
 * (nakama-api.md §1.0). `names` are the field's JSON names (proto name, then lowerCamelCase).
 */
export function stringField(body: Record<string, unknown>, ...names: string[]): string | undefined {
  for (const name of names) {
    const value = Object.hasOwn(body, name) ? body[name] : undefined
    if (value === undefined || value === null) continue
    if (typeof value === 'string') return value
    throw new FakeError(3, `proto: (${positions.get(body)?.get(name) ?? 'line 1:1'}): invalid value for string type: ${rawText(value)}`)
  }
  return undefined
}

/** A map<string, string> field (session `vars`): an object of strings, else 400 as protojson says it. */
export function stringMap(body: Record<string, unknown>, name: string): Record<string, string> | undefined {
  const value = Object.hasOwn(body, name) ? body[name] : undefined
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'object' || Array.isArray(value) || value instanceof JsonNumber) {
    throw new FakeError(3, `proto: (${positions.get(body)?.get(name) ?? 'line 1:1'}): unexpected token ${rawText(value)}`)
  }
  const map = value as Record<string, unknown>
  return Object.fromEntries(Object.keys(map).map((k) => [k, stringField(map, k) ?? '']))
}
