import type { Parsed } from './cron-parse.js'

// The calendar side of Nakama's cronexpr (cronexpr_next.go at 72a49a94): Go's time.Date and
// calculateActualDaysOfMonth, in UTC.

/** A UTC time's fields, as Go's Year() ... Second() and Weekday() read them (month 1-12, Sunday 0). */
export interface Parts { y: number; mo: number; d: number; h: number; mi: number; s: number; wd: number }
/** The fields of the instant `ms`. */
export function parts(ms: number): Parts {
  const t = new Date(ms)
  return { y: t.getUTCFullYear(), mo: t.getUTCMonth() + 1, d: t.getUTCDate(), h: t.getUTCHours(), mi: t.getUTCMinutes(), s: t.getUTCSeconds(), wd: t.getUTCDay() }
}

/** time.Date in UTC: out-of-range values carry over as Go's do (month 0 is the December before). */
export function date(y: number, mo: number, d: number, h: number, mi: number, s: number): number {
  const t = new Date(0)
  t.setUTCFullYear(y, mo - 1, d)
  t.setUTCHours(h, mi, s, 0)
  return t.getTime()
}

const DOW_OFFSETS = [[1, 8, 15, 22, 29], [2, 9, 16, 23, 30], [3, 10, 17, 24, 31], [4, 11, 18, 25], [5, 12, 19, 26], [6, 13, 20, 27], [7, 14, 21, 28]]

/** workdayOfMonth: a Saturday moves to the Friday, a Sunday to the Monday, within the month. */
function workday(target: Parts, lastDom: number): number {
  if (target.wd === 6) return target.d > 1 ? target.d - 1 : target.d + 2
  if (target.wd === 0) return target.d < lastDom ? target.d + 1 : target.d - 2
  return target.d
}

/**
 * calculateActualDaysOfMonth: the days of `month` either day field picks (crontab: when both are
 * restricted, either matching is enough), or every day when neither is.
 */
export function actualDays(e: Parsed, year: number, month: number): number[] {
  const firstDay = parts(date(year, month, 1, 0, 0, 0))
  const lastDay = parts(date(firstDay.y, firstDay.mo + 1, firstDay.d - 1, 0, 0, 0))
  const lastDom = lastDay.d
  if (!e.daysOfMonthRestricted && !e.daysOfWeekRestricted) return Array.from({ length: lastDom }, (_, i) => i + 1)
  const days = new Set<number>()
  if (e.daysOfMonthRestricted) {
    if (e.lastDayOfMonth) days.add(lastDom)
    if (e.lastWorkdayOfMonth) days.add(workday(lastDay, lastDom))
    for (const v of e.daysOfMonth) if (v <= lastDom) days.add(v)
    // As per Wikipedia (cronexpr says): a workday never crosses the month's boundaries.
    for (const v of e.workdaysOfMonth) if (v <= lastDom) days.add(workday(parts(date(firstDay.y, firstDay.mo, firstDay.d + v - 1, 0, 0, 0)), lastDom))
  }
  if (e.daysOfWeekRestricted) {
    let offset = 7 - firstDay.wd
    for (const v of e.daysOfWeek) {
      const w = DOW_OFFSETS[(offset + v) % 7]!
      for (const day of w.slice(0, 4)) days.add(day)
      if (w.length > 4 && w[4]! <= lastDom) days.add(w[4]!)
    }
    for (const v of e.specificWeekDaysOfWeek) {
      const day = 1 + 7 * Math.floor(v / 7) + ((offset + v) % 7)
      if (day <= lastDom) days.add(day)
    }
    const origin = parts(date(firstDay.y, firstDay.mo + 1, firstDay.d - 7, 0, 0, 0))
    offset = 7 - origin.wd
    for (const v of e.lastWeekDaysOfWeek) {
      const day = origin.d + ((offset + v) % 7)
      if (day <= lastDom) days.add(day)
    }
  }
  return [...days].sort((a, b) => a - b)
}
