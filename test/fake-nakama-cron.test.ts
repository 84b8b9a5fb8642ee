import t from 'tap'
import { parseSchedule } from './fake-nakama/cron.js'
import { startFakeNakama } from './fake-nakama/server.js'

// The fake's port of Nakama's cronexpr (internal/cronexpr, nakama-api.md §3.4). Each expected time
// was worked out by hand from the Go source (Parse, Next, Last), not read off the port, so the
// table pins Nakama's reading, quirks included. November 2026 starts on a Sunday; the 18th, the
// usual starting point here, is a Wednesday.

const FROM = '2026-11-18T10:00:00Z'
/** Go's time.Time{}: what Next and Last return when no time matches. */
const ZERO = '0001-01-01T00:00:00.000Z'
const iso = (s: string) => new Date(s).toISOString()

t.test('Next: the first fire strictly after a time, UTC, as cronexpr computes it', async (t) => {
  const cases: Array<[schedule: string, from: string, next: string, why: string]> = [
    ['0 0 * * 1', FROM, '2026-11-23T00:00:00Z', 'Mondays'],
    ['*/15 * * * *', FROM, '2026-11-18T10:15:00Z', 'strictly after: 10:00 itself is a fire'],
    ['*/05 * * * *', FROM, '2026-11-18T10:05:00Z', 'a step of 05 is in the number table'],
    ['0 0 1 * *', FROM, '2026-12-01T00:00:00Z', 'the 1st of each month'],
    ['@weekly', FROM, '2026-11-22T00:00:00Z', 'the alias is 0 0 0 * * 0 *: Sundays'],
    ['0 12 * * * 2027', FROM, '2027-01-01T12:00:00Z', '6 fields: the last is the year'],
    ['30 0 12 * * * *', FROM, '2026-11-18T12:00:30Z', '7 fields: the first is the second'],
    // The month table has no `01`...`09` although the pattern takes them: the map's zero value,
    // 0, is time.Date's month 0, the December before the year nextYear picked.
    ['0 0 1 01 *', FROM, '2026-12-01T00:00:00Z', 'month 01 is 0: December 1st, not January 1st'],
    ['0 0 1 01 *', '2026-12-15T00:00:00Z', '2026-12-01T00:00:00Z', 'month 0 even gives a time before `from`'],
    ['0 0 * * 01', FROM, '2026-11-22T00:00:00Z', 'weekday 01 is 0: Sundays, not Mondays'],
    ['0 0 * * sun-7', FROM, '2026-11-22T00:00:00Z', 'sun-7 is the range 0-0: Sundays only'],
    ['0 0 * * SUN-7', '2026-11-22T00:00:00Z', '2026-11-29T00:00:00Z', 'names in any case; still Sundays only'],
    // A weekday range ending in 7 or 05 ends at 0, before its start: no weekday at all. With the
    // day of month left at *, no day of any month matches, and Next walks to 2099 and gives up.
    ['0 0 * * 5-7', FROM, ZERO, '5-7 is empty: never'],
    ['0 0 * * 1-05', FROM, ZERO, '1-05 is 1-0, empty: never'],
    ['0 0 13 * 5-7', FROM, '2026-12-13T00:00:00Z', 'an empty weekday list still restricts: the 13th alone'],
    ['0 0 L * *', FROM, '2026-11-30T00:00:00Z', 'L: the last day of the month'],
    ['0 0 L * *', '2027-02-03T00:00:00Z', '2027-02-28T00:00:00Z', 'L in a 28-day February'],
    ['0 0 LW * *', '2027-01-10T00:00:00Z', '2027-01-29T00:00:00Z', 'LW: the 31st is a Sunday, so the Friday before'],
    ['0 0 15W * *', '2026-11-01T12:00:00Z', '2026-11-16T00:00:00Z', '15W: the 15th is a Sunday, so Monday the 16th'],
    ['0 0 15W * *', '2026-08-01T00:00:00Z', '2026-08-14T00:00:00Z', '15W: the 15th is a Saturday, so Friday the 14th'],
    ['0 0 * * 5L', FROM, '2026-11-27T00:00:00Z', '5L: the last Friday'],
    ['0 0 * * 5#3', FROM, '2026-11-20T00:00:00Z', '5#3: the third Friday'],
    // Both day fields restricted: either one matching is enough (the crontab rule cronexpr follows).
    ['0 0 13 * 5', FROM, '2026-11-20T00:00:00Z', 'the 13th or a Friday: Friday the 20th'],
    ['0 0 13 * 5', '2026-12-11T12:00:00Z', '2026-12-13T00:00:00Z', 'the 13th or a Friday: Sunday the 13th'],
    // A list holding * leaves its day field unrestricted: the other field alone picks the days.
    ['0 0 20 * *,3', FROM, '2026-11-20T00:00:00Z', 'weekday list with *: the 20th alone'],
    ['0 0 1/10 * *', FROM, '2026-11-21T00:00:00Z', 'N/step runs from N to the field end: 1, 11, 21, 31'],
    // Only whole seconds count: within a fire's own second, that fire is already past.
    ['* * * * *', '2026-11-18T10:07:00.300Z', '2026-11-18T10:08:00Z', 'in the fire\'s own second: the minute after'],
  ]
  for (const [schedule, from, next, why] of cases) {
    t.equal(parseSchedule(schedule).next(new Date(from)).toISOString(), iso(next), `${schedule} from ${from}: ${why}`)
  }
})

t.test('Last: the previous fire, as calculatePrevReset takes it, quirks included', async (t) => {
  const cases: Array<[schedule: string, from: string, last: string, why: string]> = [
    ['0 0 * * 1', FROM, '2026-11-16T00:00:00Z', 'the Monday before'],
    ['0 0 * * 1', '2026-11-16T00:00:00Z', '2026-11-09T00:00:00Z', 'strictly before: a fire at `from` is skipped'],
    ['*/15 * * * *', '2026-11-18T10:07:00Z', '2026-11-18T10:00:00Z', 'the quarter hour before'],
    ['*/15 * * * *', '2026-11-18T10:15:30Z', '2026-11-18T10:15:00Z', 'the fire earlier in the same minute'],
    ['0 0 1 * *', FROM, '2026-11-01T00:00:00Z', 'the 1st of this month'],
    // Within a fire's own second Last skips that fire too, so Last and Next are two periods apart.
    ['* * * * *', '2026-11-18T10:07:00.300Z', '2026-11-18T10:06:00Z', 'in the fire\'s own second: the minute before'],
    ['0 0 * * *', '2026-11-19T00:00:00.300Z', '2026-11-18T00:00:00Z', 'a daily board in its reset second: the day before'],
    ['0 0 * * 5-7', FROM, ZERO, 'never fired: Last walks back to 1970 and gives up'],
    // lastSecond only looks at the second just before; else lastMinute steps back a minute, and
    // past the hour's start lastHour picks the hour before: 10:00:05 is passed over.
    ['*/5 * * * * * *', '2026-11-18T10:00:07Z', '2026-11-18T09:59:55Z', 'seconds: the fire at 10:00:05 is missed'],
    ['*/5 * * * * * *', '2026-11-18T10:00:06Z', '2026-11-18T10:00:05Z', 'seconds: the second just before is found'],
  ]
  for (const [schedule, from, last, why] of cases) {
    t.equal(parseSchedule(schedule).last(new Date(from)).toISOString(), iso(last), `${schedule} from ${from}: ${why}`)
  }
})

t.test('Parse refuses what cronexpr refuses, with its error', async (t) => {
  const cases: Array<[schedule: string, error: string]> = [
    ['0 0 * *', 'missing field(s)'],
    // The alias replacer is case-sensitive: @WEEKLY stays one field.
    ['@WEEKLY', 'missing field(s)'],
    // `000` matches no value pattern (at most two digits); `005` is no key of the number table,
    // so the step is the zero value, and a step below 1 is refused.
    ['000 0 * * *', "syntax error in minute field: '000'"],
    ['*/005 * * * *', 'invalid interval */005'],
    ['0 24 * * *', "syntax error in hour field: '24'"],
    ['0 0 0 * *', "syntax error in day-of-month field: '0'"],
    ['0 0 1 00 *', "syntax error in month field: '00'"],
    ['0 0 * * */7', 'invalid interval */7'],
    ['0 0 * * 8', "syntax error in day-of-week field: '8'"],
    ['0 0 , * *', 'day-of-month field: missing directive'],
  ]
  for (const [schedule, error] of cases) t.throws(() => parseSchedule(schedule), { message: error }, schedule)
})

t.test('the fake uses it: Parse alone at leaderboardCreate, Go\'s zero time as a never-firing board\'s expiry', async (t) => {
  const fake = await startFakeNakama({ now: () => Date.parse(FROM) })
  t.teardown(() => fake.close())
  const nk = fake.runtime.nk
  t.throws(() => nk.leaderboardCreate('bad', false, 'desc', 'best', '*/005 * * * *', {}, true), TypeError, 'a refused schedule is a TypeError')
  nk.leaderboardCreate('never', false, 'desc', 'best', '0 0 * * 5-7', {}, true)
  const [board] = nk.leaderboardsGetId(['never'])
  // api.Leaderboard's prev_reset and next_reset are uint32: the zero time's -62135596800 wraps.
  t.same([board!.prevReset, board!.nextReset], [2288912640, 2288912640], 'uint32 of -62135596800')
  const record = nk.leaderboardRecordWrite('never', '00000000-0000-4000-8000-000000000001', 'ana', 5)
  t.equal(record.expiryTime, -62135596800, 'the record lands in the period that expires at the zero time')
  nk.leaderboardCreate('weekly', false, 'desc', 'best', '0 0 * * 1', {}, true)
  const [weekly] = nk.leaderboardsGetId(['weekly'])
  t.same([weekly!.prevReset, weekly!.nextReset], [Date.parse('2026-11-16T00:00:00Z') / 1000, Date.parse('2026-11-23T00:00:00Z') / 1000])
})
