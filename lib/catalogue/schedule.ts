import { Cron } from 'croner'
import { messageOf } from '../log.js'

/**
 * Why `expr` is not a usable reset schedule, or null when it is. Nakama takes five-field cron
 * (minute hour day month weekday); croner would also take seconds, years and @nicknames, so the
 * field count is checked first, then croner parses it, then it must fire at least once.
 */
export function cronProblem(expr: string): string | null {
  let problem = problems.get(expr)
  if (problem === undefined) problems.set(expr, (problem = findProblem(expr)))
  return problem
}

function findProblem(expr: string): string | null {
  // Read as Nakama is sent it: `07` is a Sunday to the range checks, as `7` is.
  const trimmed = withoutLeadingZeros(expr).trim()
  const fields = trimmed === '' ? [] : trimmed.split(/\s+/)
  if (fields.length !== 5) {
    return `must be a five-field cron expression (minute hour day month weekday) or null, got ${fields.length} field(s)`
  }
  const outOfRange = rangeProblem(fields) ?? sundayRangeProblem(fields[4]!)
  if (outOfRange) return `is not a valid cron expression: ${outOfRange}`
  let cron: Cron
  try {
    cron = parse(expr)
  } catch (err) {
    return `is not a valid cron expression: ${messageOf(err)}`
  }
  if (cron.nextRun(new Date(0)) === null) return 'is a cron expression that never fires'
  return null
}

// Each field's name, range, and largest value in Nakama's cronexpr (its weekdays are 0-6, 7 being 0).
// A step stops at that value, and so does `N/step`: an hour step of 24 is refused there (croner
// takes it); a weekday step is at most 6.
const FIELDS: readonly [string, number, number, number][] = [
  ['minute', 0, 59, 59], ['hour', 0, 23, 23], ['day', 1, 31, 31], ['month', 1, 12, 12], ['weekday', 0, 7, 6],
]
/** Sunday as a weekday range's end or an `N/step`'s start, where cronexpr reads it as 0. */
const SUNDAY = /^(7|sun)$/i

/**
 * The first number out of its field's range (steps after `/` and `#` are counts, not values), a
 * step Nakama refuses, or croner's `+` (its "day and weekday" modifier, no cron syntax: Nakama
 * refuses the schedule); null when none.
 */
function rangeProblem(fields: string[]): string | null {
  for (const [i, [name, low, high, maxStep]] of FIELDS.entries()) {
    const field = fields[i]!
    if (field.includes('+')) return `${name} ${field}: "+" is not cron syntax`
    for (const digits of field.replace(/[/#]\d+/g, '').match(/\d+/g) ?? []) {
      const value = Number(digits)
      if (value < low || value > high) return `${name} ${digits} is out of range ${low}-${high}`
    }
    for (const [, digits] of field.matchAll(/\/(\d+)/g)) {
      const step = Number(digits)
      if (step < 1 || step > maxStep) return `${name} step ${digits} is out of range 1-${maxStep}`
    }
  }
  return null
}

/**
 * A weekday range that ends at Sunday written as 7 or SUN: croner reads `5-7` as Friday to Sunday,
 * Nakama's cronexpr reads its end as 0, before its start, and so the range as no day at all (a board
 * that never resets there, while nextResetAt says it does). One from Sunday (0 or SUN) to Sunday
 * is every day to croner (it reads `-sun` as `-7`), Sunday alone to cronexpr.
 */
function sundayRangeProblem(weekday: string): string | null {
  for (const [range, start, end] of weekday.matchAll(/([0-9a-z]+)-([0-9a-z]+)/gi)) {
    // `7-7` and `7-sun` are Sunday alone in both.
    if (!SUNDAY.test(end!) || start === '7') continue
    if (/^(0|sun)$/i.test(start!)) return `weekday range ${range} runs from Sunday to Sunday, every day to some cron readers and Sunday alone to Nakama: write * for every day, or 0 for Sunday`
    return `weekday range ${range} ends at Sunday, which Nakama counts as day 0, at the start of the week: list Sunday as 0 instead (e.g. 5-6,0)`
  }
  return null
}

/**
 * `expr` without leading zeros in its numbers (`01` is `1`, `000` is `0`): the same schedule to
 * croner, and the form in which Nakama's cronexpr reads it as croner does. cronexpr's month and
 * weekday tables have no `01` to `09` although its patterns take them, so it reads such a month or
 * weekday as 0, and a number of three digits matches none of its patterns. Nakama is sent this form.
 */
export function withoutLeadingZeros(expr: string): string {
  return expr.replace(/(?<![0-9])0+(?=[0-9])/g, '')
}

// Parsing and searching cost ~0.3 ms a schedule, and a catalogue repeats a handful of schedules
// over many boards: remember parses, problems and the last next run per expression.
const parsed = new Map<string, Cron>()
const problems = new Map<string, string | null>()
const nextRuns = new Map<string, { from: number; next: number | null }>()
function parse(expr: string): Cron {
  let cron = parsed.get(expr)
  if (cron === undefined) {
    if (parsed.size >= 1000) {
      parsed.clear()
      problems.clear()
      nextRuns.clear()
    }
    // Without leading zeros, as Nakama is sent it: `07/2` is a Sunday's step, as `7/2` is.
    cron = new Cron(asCronexpr(withoutLeadingZeros(expr)), { timezone: 'UTC' })
    parsed.set(expr, cron)
  }
  return cron
}

/**
 * `expr` as croner reads what Nakama's cronexpr does. A day or weekday list that holds `*` or `?`
 * is written as `*`: cronexpr marks such a field unrestricted, so the other day field alone picks
 * the days, where croner keeps the list restricted and, both being restricted, fires on either
 * (every day). `N/step`, which croner refuses, is written as the range cronexpr reads it as,
 * `N-max/step`.
 */
export function asCronexpr(expr: string): string {
  return expr.trim().split(/\s+/).map((field, i) => {
    const entries = field.split(',')
    if ((i === 2 || i === 4) && entries.some((entry) => entry === '*' || entry === '?')) return '*'
    return entries.map((entry) => entry.replace(/^([0-9a-z]+)\/(\d+)$/i, (_, start: string, step: string) => {
      const first = i === 4 && SUNDAY.test(start) ? '0' : start
      return `${first}-${FIELDS[i]![3]}/${step}`
    })).join(',')
  }).join(' ')
}

/** The next reset after `now` (cron evaluated in UTC, CONTRACT §3), in epoch ms; null when never. */
export function nextReset(expr: string | null, now: number): number | null {
  if (expr === null) return null
  const known = nextRuns.get(expr)
  // The next run after `from` is also the next run after any `now` between `from` and it.
  if (known && known.from <= now && (known.next === null || now < known.next)) return known.next
  const next = parse(expr).nextRun(new Date(now))?.getTime() ?? null
  nextRuns.set(expr, { from: now, next })
  return next
}

/** How far before now `resetTimes` starts: room for a difference between the platform's and Nakama's clocks. */
const CLOCK_SKEW_MS = 60_000

/**
 * The schedule's consecutive fire times, Unix seconds, from the last one before `now` less a minute
 * on; null without a schedule. Nakama tells a board's schedule only through the current period's
 * bounds (prevReset, nextReset), which are two neighbours here when the schedules agree.
 */
export function resetTimes(expr: string | null, now: number): number[] | null {
  if (expr === null) return null
  const cron = parse(expr)
  const from = new Date(now - CLOCK_SKEW_MS)
  return [...cron.previousRuns(1, from), ...cron.nextRuns(4, from)].map((d) => Math.floor(d.getTime() / 1000))
}
