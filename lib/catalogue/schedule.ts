import { Cron } from 'croner'

/**
 * Why `expr` is not a usable reset schedule, or null when it is. Nakama takes five-field cron
 * (minute hour day month weekday); croner would also take seconds, years and @nicknames, so the
 * field count is checked first, then croner parses it, then it must fire at least once.
 */
export function cronProblem(expr: string): string | null {
  const fields = expr.trim().split(/\s+/)
  if (fields.length !== 5 || expr.trim() === '') {
    return `must be a five-field cron expression (minute hour day month weekday) or null, got ${fields.length} field(s)`
  }
  let cron: Cron
  try {
    cron = new Cron(expr, { timezone: 'UTC' })
  } catch (err) {
    return `is not a valid cron expression: ${err instanceof Error ? err.message : String(err)}`
  }
  if (cron.nextRun(new Date(0)) === null) return 'is a cron expression that never fires'
  return null
}

/** The next reset after `now` (cron evaluated in UTC, CONTRACT §3), in epoch ms; null when never. */
export function nextReset(expr: string | null, now: number): number | null {
  if (expr === null) return null
  const next = new Cron(expr, { timezone: 'UTC' }).nextRun(new Date(now))
  return next === null ? null : next.getTime()
}
