import { HttpError } from './errors.js'

/** A JSON number: sign, integer digits, fraction digits, exponent. */
const NUMBER = /-?(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?/y

/**
 * Refuse numbers JSON.parse would change without a word: one that is not an integer but reads as
 * one (`9007199254740990.5`, `1e-400`, `1.0000000000000001`: an integer field would take a value
 * the client never sent), one too large for a double (`1e400` becomes Infinity, stored as null),
 * and an integer beyond 2^53 (it comes back as a neighbour). Other fractions (0.1) are kept as
 * JSON.parse reads them. The text has parsed, so a scan that skips strings sees every number.
 */
export function checkNumbers(text: string): void {
  if (!/[.eE]|\d{16}/.test(text)) return
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === 0x22) {
      // Skip a string, escapes included.
      for (i++; text.charCodeAt(i) !== 0x22; i++) if (text.charCodeAt(i) === 0x5c) i++
    } else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      NUMBER.lastIndex = i
      const m = NUMBER.exec(text)!
      const token = m[0]
      const value = Number(token)
      if (!Number.isFinite(value) || (Number.isInteger(value) && (!isIntegerText(m[1]!, m[2] ?? '', Number(m[3] ?? 0)) || Math.abs(value) > Number.MAX_SAFE_INTEGER))) {
        throw new HttpError(400, 'VALIDATION_FAILED', `the number ${token.length > 40 ? `${token.slice(0, 40)}…` : token} cannot be kept exactly`)
      }
      i += token.length - 1
    }
  }
}

/** Whether digits `int`.`frac` times 10^exp is a whole number. */
function isIntegerText(int: string, frac: string, exp: number): boolean {
  const digits = (int + frac).replace(/^0+/, '')
  if (digits === '' || /^0*$/.test(digits)) return true
  // The significant digits end at the last non-zero one. A loop, not replace(/0+$/): that regular
  // expression took quadratic time on a long run of zeros (5 s for `1.000…0001` in a 64 KiB body).
  let significant = digits.length
  while (digits.charCodeAt(significant - 1) === 0x30) significant--
  // The decimal point sits after this many of `digits`; everything significant must lie before it.
  const point = digits.length - frac.length + exp
  return significant <= point
}
