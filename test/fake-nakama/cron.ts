import { parse, type Parsed } from './cron-parse.js'
import { actualDays, date, parts, type Parts } from './cron-days.js'

// Nakama reads reset schedules with its vendored gorhill cronexpr (internal/cronexpr; nakama-api.md
// §3.4). This ports Next and Last line for line from heroiclabs/nakama (cronexpr.go at 5943835d,
// cronexpr_next.go at 72a49a94; Parse, in cron-parse.ts, from cronexpr_parse.go at 5f7f737e),
// quirks kept: the fake must misread cron exactly where Nakama does, so that a test can catch the
// platform misreading it. Times are UTC, as Nakama passes time.Now().UTC().

/** Go's time.Time{} (0001-01-01T00:00:00Z): what Next and Last return when no time matches. */
const ZERO_MS = -62135596800000

/** sort.SearchInts: the first index whose value is >= x. */
function search(list: number[], x: number): number {
  let lo = 0
  let hi = list.length
  while (lo < hi) {
    const mid = (lo + hi) >> 1
    if (list[mid]! < x) lo = mid + 1
    else hi = mid
  }
  return lo
}

/** A Go slice index: out of range panics, as Nakama's Next does on a schedule with no valid hour. */
function at(list: number[], i: number): number {
  if (i < 0 || i >= list.length) throw new RangeError(`runtime error: index out of range [${i}] with length ${list.length}`)
  return list[i]!
}
const first = (list: number[]) => at(list, 0)
const final = (list: number[]) => at(list, list.length - 1)

/** A reset schedule as cronexpr.Parse reads it; the constructor throws where Parse refuses the line. */
class Expression {
  readonly #e: Parsed
  /** Go's actualDaysOfMonthList field, which nextYear and the last* functions share. */
  #days: number[] = []

  constructor(cronLine: string) {
    this.#e = parse(cronLine)
  }

  /** Next: the first fire strictly after `from` (its milliseconds ignored); Go's zero time when none. */
  next(from: Date): Date {
    return new Date(this.#next(from.getTime()))
  }

  /** Last: the latest fire before `from`, with Last's quirks; Go's zero time when none. */
  last(from: Date): Date {
    return new Date(this.#last(from.getTime()))
  }

  #next(from: number): number {
    if (from === ZERO_MS) return from
    const e = this.#e
    const t = parts(from)
    // Until `from` stops matching a field; from there, the first matching time past it.
    let i = search(e.years, t.y)
    if (i === e.years.length) return ZERO_MS
    if (t.y !== e.years[i]) return this.#nextYear(t)
    i = search(e.months, t.mo)
    if (i === e.months.length) return this.#nextYear(t)
    if (t.mo !== e.months[i]) return this.#nextMonth(t)
    const days = actualDays(this.#e, t.y, t.mo)
    if (days.length === 0) return this.#nextMonth(t)
    i = search(days, t.d)
    if (i === days.length) return this.#nextMonth(t)
    if (t.d !== days[i]) return this.#nextDayOfMonth(t, days)
    i = search(e.hours, t.h)
    if (i === e.hours.length) return this.#nextDayOfMonth(t, days)
    if (t.h !== e.hours[i]) return this.#nextHour(t, days)
    i = search(e.minutes, t.mi)
    if (i === e.minutes.length) return this.#nextHour(t, days)
    if (t.mi !== e.minutes[i]) return this.#nextMinute(t, days)
    i = search(e.seconds, t.s)
    if (i === e.seconds.length) return this.#nextMinute(t, days)
    return this.#nextSecond(t, days)
  }

  #nextYear(t: Parts): number {
    const e = this.#e
    const i = search(e.years, t.y + 1)
    if (i === e.years.length) return ZERO_MS
    const year = e.years[i]!
    this.#days = actualDays(this.#e, year, first(e.months))
    if (this.#days.length === 0) return this.#nextMonth(parts(date(year, first(e.months), 1, first(e.hours), first(e.minutes), first(e.seconds))))
    return date(year, first(e.months), first(this.#days), first(e.hours), first(e.minutes), first(e.seconds))
  }

  #nextMonth(t: Parts): number {
    const e = this.#e
    const i = search(e.months, t.mo + 1)
    if (i === e.months.length) return this.#nextYear(t)
    const month = e.months[i]!
    const days = actualDays(this.#e, t.y, month)
    if (days.length === 0) return this.#nextMonth(parts(date(t.y, month, 1, first(e.hours), first(e.minutes), first(e.seconds))))
    return date(t.y, month, first(days), first(e.hours), first(e.minutes), first(e.seconds))
  }

  #nextDayOfMonth(t: Parts, days: number[]): number {
    const e = this.#e
    const i = search(days, t.d + 1)
    if (i === days.length) return this.#nextMonth(t)
    return date(t.y, t.mo, days[i]!, first(e.hours), first(e.minutes), first(e.seconds))
  }

  #nextHour(t: Parts, days: number[]): number {
    const e = this.#e
    const i = search(e.hours, t.h + 1)
    if (i === e.hours.length) return this.#nextDayOfMonth(t, days)
    return date(t.y, t.mo, t.d, e.hours[i]!, first(e.minutes), first(e.seconds))
  }

  #nextMinute(t: Parts, days: number[]): number {
    const e = this.#e
    const i = search(e.minutes, t.mi + 1)
    if (i === e.minutes.length) return this.#nextHour(t, days)
    return date(t.y, t.mo, t.d, t.h, e.minutes[i]!, first(e.seconds))
  }

  #nextSecond(t: Parts, days: number[]): number {
    const i = search(this.#e.seconds, t.s + 1)
    if (i === this.#e.seconds.length) return this.#nextMinute(t, days)
    return date(t.y, t.mo, t.d, t.h, t.mi, this.#e.seconds[i]!)
  }

  #last(from: number): number {
    if (from === ZERO_MS) return from
    const e = this.#e
    const t = parts(from)
    // Each step as Go has it: an empty list panics at the `[i]` of `i == 0 && v != list[i]`.
    let i = search(e.years, t.y)
    if (i === 0 && t.y !== at(e.years, i)) return ZERO_MS
    if (i === e.years.length || t.y !== e.years[i]) return this.#lastYear(t, false)
    i = search(e.months, t.mo)
    if (i === 0 && t.mo !== at(e.months, i)) return this.#lastYear(t, true)
    if (i === e.months.length || t.mo !== e.months[i]) return this.#lastMonth(t, false)
    this.#days = actualDays(this.#e, t.y, t.mo)
    if (this.#days.length === 0) return this.#lastMonth(t, true)
    i = search(this.#days, t.d)
    if (i === 0 && t.d !== at(this.#days, i)) return this.#lastMonth(t, true)
    if (i === this.#days.length || t.d !== this.#days[i]) return this.#lastActualDayOfMonth(t, false)
    i = search(e.hours, t.h)
    if (i === 0 && t.h !== at(e.hours, i)) return this.#lastActualDayOfMonth(t, true)
    if (i === e.hours.length || t.h !== e.hours[i]) return this.#lastHour(t, false)
    i = search(e.minutes, t.mi)
    if (i === 0 && t.mi !== at(e.minutes, i)) return this.#lastHour(t, true)
    if (i === e.minutes.length || t.mi !== e.minutes[i]) return this.#lastMinute(t, false)
    i = search(e.seconds, t.s)
    if (i === e.seconds.length) return this.#lastMinute(t, true)
    return this.#lastSecond(t)
  }

  /** The largest list value <= v (v itself counts), or null when none: the shared shape of the last* steps. */
  #atOrBefore(list: number[], v: number): number | null {
    const i = search(list, v)
    if (i < list.length && v === list[i]) return v
    return i === 0 ? null : list[i - 1]!
  }

  #lastYear(t: Parts, acc: boolean): number {
    const e = this.#e
    const year = this.#atOrBefore(e.years, acc ? t.y - 1 : t.y)
    if (year === null) return ZERO_MS
    this.#days = actualDays(this.#e, year, final(e.months))
    if (this.#days.length === 0) return this.#lastMonth(parts(date(year, final(e.months), 1, final(e.hours), final(e.minutes), final(e.seconds))), true)
    return date(year, final(e.months), final(this.#days), final(e.hours), final(e.minutes), final(e.seconds))
  }

  #lastMonth(t: Parts, acc: boolean): number {
    const e = this.#e
    const month = this.#atOrBefore(e.months, acc ? t.mo - 1 : t.mo)
    if (month === null) return this.#lastYear(t, true)
    this.#days = actualDays(this.#e, t.y, month)
    if (this.#days.length === 0) return this.#lastMonth(parts(date(t.y, month, 1, final(e.hours), final(e.minutes), final(e.seconds))), true)
    return date(t.y, month, final(this.#days), final(e.hours), final(e.minutes), final(e.seconds))
  }

  #lastActualDayOfMonth(t: Parts, acc: boolean): number {
    const day = this.#atOrBefore(this.#days, acc ? t.d - 1 : t.d)
    if (day === null) return this.#lastMonth(t, true)
    return date(t.y, t.mo, day, final(this.#e.hours), final(this.#e.minutes), final(this.#e.seconds))
  }

  #lastHour(t: Parts, acc: boolean): number {
    const hour = this.#atOrBefore(this.#e.hours, acc ? t.h - 1 : t.h)
    if (hour === null) return this.#lastActualDayOfMonth(t, true)
    return date(t.y, t.mo, t.d, hour, final(this.#e.minutes), final(this.#e.seconds))
  }

  // Go's lastMinute steps back one minute when `acc` is false, the other way round from its siblings.
  #lastMinute(t: Parts, acc: boolean): number {
    const minute = this.#atOrBefore(this.#e.minutes, acc ? t.mi : t.mi - 1)
    if (minute === null) return this.#lastHour(t, true)
    return date(t.y, t.mo, t.d, t.h, minute, final(this.#e.seconds))
  }

  // Only the second just before counts; any other falls through to an earlier minute.
  #lastSecond(t: Parts): number {
    const v = t.s - 1
    const i = search(this.#e.seconds, v)
    if (i === this.#e.seconds.length || this.#e.seconds[i] !== v) return this.#lastMinute(t, false)
    return date(t.y, t.mo, t.d, t.h, t.mi, v)
  }
}

/** cronexpr.Parse: throws its error where Nakama refuses `cronLine` (leaderboardCreate's TypeError). */
export function parseSchedule(cronLine: string): Expression {
  return new Expression(cronLine)
}
