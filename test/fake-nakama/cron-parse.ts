// Parse of Nakama's vendored gorhill cronexpr, ported line for line, quirks kept (heroiclabs/nakama
// internal/cronexpr: cronexpr_parse.go at 5f7f737e, Parse in cronexpr.go at 5943835d). cron.ts
// evaluates what it returns.

const span = (a: number, b: number) => Array.from({ length: b - a + 1 }, (_, i) => a + i)
const table = (entries: Array<[string, number]>) => new Map(entries)

// Go map lookups: a missing key is the zero value, so `05` as a weekday is 0 and a step of `005` is 0.
const NUMBER_TOKENS = table([
  ...span(0, 59).map((n): [string, number] => [String(n), n]),
  ...span(0, 9).map((n): [string, number] => [`0${n}`, n]),
  ...span(1970, 2099).map((n): [string, number] => [String(n), n]),
])
const MONTH_WORDS = ['jan january', 'feb february', 'mar march', 'apr april', 'may', 'jun june', 'jul july', 'aug august', 'sep september', 'oct october', 'nov november', 'dec december']
const MONTH_TOKENS = table(MONTH_WORDS.flatMap((words, i) => [String(i + 1), ...words.split(' ')].map((w): [string, number] => [w, i + 1])))
const DOW_WORDS = ['sun sunday', 'mon monday', 'tue tuesday', 'wed wednesday', 'thu thursday', 'fri friday', 'sat saturday']
const DOW_TOKENS = table([...DOW_WORDS.flatMap((words, i) => [String(i), ...words.split(' ')].map((w): [string, number] => [w, i])), ['7', 0]])
const lookup = (tokens: Map<string, number>) => (s: string) => tokens.get(s) ?? 0
const atoi = lookup(NUMBER_TOKENS)

interface Field { name: string; min: number; max: number; defaults: number[]; value: string; atoi: (s: string) => number }
const SECOND: Field = { name: 'second', min: 0, max: 59, defaults: span(0, 59), value: '0?[0-9]|[1-5][0-9]', atoi }
const MINUTE: Field = { ...SECOND, name: 'minute' }
const HOUR: Field = { name: 'hour', min: 0, max: 23, defaults: span(0, 23), value: '0?[0-9]|1[0-9]|2[0-3]', atoi }
const DOM: Field = { name: 'day-of-month', min: 1, max: 31, defaults: span(1, 31), value: '0?[1-9]|[12][0-9]|3[01]', atoi }
// Go's value patterns as they are, `march|april` twice in the month's included.
const MONTH: Field = {
  name: 'month', min: 1, max: 12, defaults: span(1, 12), atoi: lookup(MONTH_TOKENS),
  value: '0?[1-9]|1[012]|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|january|february|march|april|march|april|june|july|august|september|october|november|december',
}
const DOW: Field = {
  name: 'day-of-week', min: 0, max: 6, defaults: span(0, 6), atoi: lookup(DOW_TOKENS),
  value: '0?[0-7]|sun|mon|tue|wed|thu|fri|sat|sunday|monday|tuesday|wednesday|thursday|friday|saturday',
}
const YEAR: Field = { name: 'year', min: 1970, max: 2099, defaults: span(1970, 2099), value: '19[789][0-9]|20[0-9]{2}', atoi }

const regexps = new Map<string, RegExp>()
/** makeLayoutRegexp: a layout with `%value%` replaced by the field's value pattern. */
function layout(source: string, value = ''): RegExp {
  const full = source.replaceAll('%value%', value)
  let re = regexps.get(full)
  if (!re) regexps.set(full, (re = new RegExp(full)))
  return re
}

const ALIASES: Record<string, string> = {
  '@yearly': '0 0 0 1 1 * *', '@annually': '0 0 0 1 1 * *', '@monthly': '0 0 0 1 * * *',
  '@weekly': '0 0 0 * * 0 *', '@daily': '0 0 0 * * * *', '@hourly': '0 0 * * * * *',
}

// Go's strings.ToLower maps rune by rune; JS lowers İ (U+0130) to two characters, Go to `i`.
const lower = (s: string) => Array.from(s, (c) => (c === '\u0130' ? 'i' : c.toLowerCase())).join('')

type Directive = { kind: 'none' | 'one' | 'span' | 'all'; first: number; last: number; step: number; text: string }

/** genericFieldParse: each comma-separated entry, classified; a bad interval is refused here. */
function parseEntries(s: string, f: Field): Directive[] {
  const entries = s.match(/[^,]+/g)
  if (!entries) throw new Error(`${f.name} field: missing directive`)
  return entries.map((text): Directive => {
    const sn = lower(text)
    const interval = (digits: string) => {
      const step = atoi(digits)
      if (step < 1 || step > f.max) throw new Error(`invalid interval ${sn}`)
      return step
    }
    let m: RegExpExecArray | null
    if (layout('^\\*$|^\\?$').test(sn)) return { kind: 'all', first: f.min, last: f.max, step: 1, text }
    if (layout('^(%value%)$', f.value).test(sn)) return { kind: 'one', first: f.atoi(sn), last: 0, step: 0, text }
    if ((m = layout('^(%value%)-(%value%)$', f.value).exec(sn))) return { kind: 'span', first: f.atoi(m[1]!), last: f.atoi(m[2]!), step: 1, text }
    if ((m = layout('^\\*/(\\d+)$').exec(sn))) return { kind: 'span', first: f.min, last: f.max, step: interval(m[1]!), text }
    if ((m = layout('^(%value%)/(\\d+)$', f.value).exec(sn))) return { kind: 'span', first: f.atoi(m[1]!), last: f.max, step: interval(m[2]!), text }
    if ((m = layout('^(%value%)-(%value%)/(\\d+)$', f.value).exec(sn))) return { kind: 'span', first: f.atoi(m[1]!), last: f.atoi(m[2]!), step: interval(m[3]!), text }
    return { kind: 'none', first: 0, last: 0, step: 0, text }
  })
}

function populate(values: Set<number>, d: Directive): void {
  if (d.kind === 'one') values.add(d.first)
  else for (let i = d.first; i <= d.last; i += d.step) values.add(i)
}

const sorted = (set: Set<number>) => [...set].sort((a, b) => a - b)

/** genericFieldHandler: a `*` entry returns every value at once, before later entries are looked at. */
function parseList(s: string, f: Field): number[] {
  const values = new Set<number>()
  for (const d of parseEntries(s, f)) {
    if (d.kind === 'none') throw new Error(`syntax error in ${f.name} field: '${d.text}'`)
    if (d.kind === 'all') return f.defaults
    populate(values, d)
  }
  return sorted(values)
}

/** What Parse fills in an Expression: cron.ts's Next and Last read these. */
export interface Parsed {
  seconds: number[]
  minutes: number[]
  hours: number[]
  daysOfMonth: Set<number>
  workdaysOfMonth: Set<number>
  lastDayOfMonth: boolean
  lastWorkdayOfMonth: boolean
  daysOfMonthRestricted: boolean
  months: number[]
  daysOfWeek: Set<number>
  specificWeekDaysOfWeek: Set<number>
  lastWeekDaysOfWeek: Set<number>
  daysOfWeekRestricted: boolean
  years: number[]
}

/** Parse: a 5-, 6- (year last) or 7-field (seconds first) line; throws Parse's error when it refuses one. */
export function parse(cronLine: string): Parsed {
  // strings.NewReplacer: an alias is replaced wherever it stands, not only as the whole line.
  const cron = cronLine.replace(/@yearly|@annually|@monthly|@weekly|@daily|@hourly/g, (a) => ALIASES[a]!)
  // Go's \S: anything but its \s, which is [\t\n\f\r ] (no \v, no Unicode spaces).
  const fields = cron.match(/[^\t\n\f\r ]+/g) ?? []
  if (fields.length < 5) throw new Error('missing field(s)')
  // Fields past the 7th are ignored.
  const count = Math.min(fields.length, 7)
  let field = 0
  const seconds = count === 7 ? parseList(fields[field++]!, SECOND) : [0]
  const minutes = parseList(fields[field++]!, MINUTE)
  const hours = parseList(fields[field++]!, HOUR)
  const days = parseDays(fields[field++]!)
  const months = parseList(fields[field++]!, MONTH)
  const weekdays = parseWeekdays(fields[field++]!)
  const years = field < count ? parseList(fields[field]!, YEAR) : YEAR.defaults
  return { seconds, minutes, hours, ...days, months, ...weekdays, years }
}

/** domFieldHandler: `L`, `LW` and `15W` are the entries genericFieldParse leaves unclassified. */
function parseDays(s: string) {
  const out = { daysOfMonth: new Set<number>(), workdaysOfMonth: new Set<number>(), lastDayOfMonth: false, lastWorkdayOfMonth: false, daysOfMonthRestricted: true }
  for (const d of parseEntries(s, DOM)) {
    if (d.kind === 'none') {
      const sn = lower(d.text)
      let m: RegExpExecArray | null
      if (layout('^l$').test(sn)) out.lastDayOfMonth = true
      else if (layout('^lw$').test(sn)) out.lastWorkdayOfMonth = true
      else if ((m = layout('^(%value%)w$', DOM.value).exec(sn))) out.workdaysOfMonth.add(DOM.atoi(m[1]!))
      else throw new Error(`syntax error in day-of-month field: '${d.text}'`)
    } else {
      populate(out.daysOfMonth, d)
      // Any `*` or `?` in the list leaves the field unrestricted, whatever else it holds.
      if (d.kind === 'all') out.daysOfMonthRestricted = false
    }
  }
  return out
}

/** dowFieldHandler: `5L` (last Friday) and `5#3` (third Friday), besides the generic forms. */
function parseWeekdays(s: string) {
  const out = { daysOfWeek: new Set<number>(), specificWeekDaysOfWeek: new Set<number>(), lastWeekDaysOfWeek: new Set<number>(), daysOfWeekRestricted: true }
  for (const d of parseEntries(s, DOW)) {
    if (d.kind === 'none') {
      const sn = lower(d.text)
      let m: RegExpExecArray | null
      if ((m = layout('^(%value%)l$', DOW.value).exec(sn))) out.lastWeekDaysOfWeek.add(DOW.atoi(m[1]!))
      else if ((m = layout('^(%value%)#([1-5])$', DOW.value).exec(sn))) {
        out.specificWeekDaysOfWeek.add((DOW.atoi(m[2]!) - 1) * 7 + (DOW.atoi(m[1]!) % 7))
      } else throw new Error(`syntax error in day-of-week field: '${d.text}'`)
    } else {
      populate(out.daysOfWeek, d)
      if (d.kind === 'all') out.daysOfWeekRestricted = false
    }
  }
  return out
}
