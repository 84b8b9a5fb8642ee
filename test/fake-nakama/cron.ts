import { Cron } from 'croner'
import { asCronexpr } from '../../lib/catalogue/schedule.js'

// Nakama parses reset schedules with the vendored gorhill cronexpr (internal/cronexpr, Parse;
// nakama-api.md §3.4): 5 fields are `min hour dom month dow`, 6 add a year at the end, 7 put
// seconds first; fields past the 7th are ignored. croner reads a 6-field pattern with seconds
// first, so every schedule is handed to it as 7 fields, seconds to year.

/** cronexpr's aliases, as its normalizer rewrites them. */
const ALIASES: Record<string, string> = {
  '@yearly': '0 0 0 1 1 * *', '@annually': '0 0 0 1 1 * *', '@monthly': '0 0 0 1 * * *',
  '@weekly': '0 0 0 * * 0 *', '@daily': '0 0 0 * * * *', '@hourly': '0 0 * * * * *',
}

/** A reset schedule read as cronexpr reads it, evaluated in UTC; throws when it is no valid expression. */
export function parseSchedule(schedule: string): Cron {
  const trimmed = schedule.trim()
  const fields = (ALIASES[trimmed] ?? trimmed).split(/\s+/).filter(Boolean)
  if (fields.length < 5) throw new Error('missing field(s)')
  const seven = fields.length === 5 ? ['0', ...fields, '*'] : fields.length === 6 ? ['0', ...fields] : fields.slice(0, 7)
  // The five cron fields as croner reads cronexpr's (day lists holding `*`, `N/step`): the platform's own reading.
  const five = asCronexpr(seven.slice(1, 6).join(' '))
  return new Cron([seven[0], five, seven[6]].join(' '), { timezone: 'UTC', mode: '7-part' })
}
