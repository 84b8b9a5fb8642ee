import t from 'tap'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { resolveLeaderboard } from '../lib/catalogue/resolve.js'
import { cronProblem, nextReset, withoutLeadingZeros } from '../lib/catalogue/schedule.js'
import { buildCatalogue } from '../lib/catalogue/build.js'
import { ROOT } from './helpers/platform.js'

t.test('leaderboard resolution follows CONTRACT §5 for every type, operator and sortOrder spelling', async (t) => {
  // [type, operator implied, sortOrder implied]
  const byType: [string, string, string][] = [
    ['incr', 'incr', 'desc'], ['wins', 'incr', 'desc'], ['kills', 'incr', 'desc'], ['win_loss', 'incr', 'desc'],
    ['set', 'set', 'desc'], ['elo', 'set', 'desc'], ['rating', 'set', 'desc'], ['mastery', 'set', 'desc'],
    ['wealth', 'set', 'desc'], ['hashrate', 'set', 'desc'],
    ['best', 'best', 'desc'], ['time_best', 'best', 'asc'], ['high_score', 'best', 'desc'],
    ['highest_score', 'best', 'desc'], ['score', 'best', 'desc'], ['coop_pve_run', 'best', 'desc'],
  ]
  for (const [type, operator, sortOrder] of byType) {
    t.strictSame(
      resolveLeaderboard('b', { type: type as never }),
      { id: 'b', operator, sortOrder, resetSchedule: null, authoritative: false },
      `type ${type}`,
    )
  }
  t.strictSame(resolveLeaderboard('b', undefined), { id: 'b', operator: 'best', sortOrder: 'desc', resetSchedule: null, authoritative: false }, 'no config')
  t.strictSame(resolveLeaderboard('b', {}), { id: 'b', operator: 'best', sortOrder: 'desc', resetSchedule: null, authoritative: false }, 'empty config')
  for (const [written, resolved] of [['desc', 'desc'], ['descending', 'desc'], ['asc', 'asc'], ['ascending', 'asc']] as const) {
    t.equal(resolveLeaderboard('b', { sortOrder: written }).sortOrder, resolved, `sortOrder ${written}`)
    t.equal(resolveLeaderboard('b', { type: 'time_best', sortOrder: written }).sortOrder, resolved, `time_best with sortOrder ${written}`)
  }
  for (const operator of ['incr', 'set', 'best'] as const) {
    t.equal(resolveLeaderboard('b', { type: 'wins', operator }).operator, operator, `an explicit ${operator} wins over the type`)
  }
  t.strictSame(
    resolveLeaderboard('b', { type: 'elo', authoritative: true, resetSchedule: ' 0  0 * * 1 ' }),
    { id: 'b', operator: 'set', sortOrder: 'desc', resetSchedule: '0 0 * * 1', authoritative: true },
    'authoritative kept, schedule whitespace normalized',
  )
  t.equal(resolveLeaderboard('b', { resetSchedule: null }).resetSchedule, null)
  t.equal(resolveLeaderboard('b', { resetSchedule: '00 00 * * 01' }).resetSchedule, '0 0 * * 1', 'leading zeros dropped: one schedule however it is written')
})

t.test('reset schedules: five fields that croner accepts and that fire', async (t) => {
  const cases: [string, string | null][] = [
    ['0 0 * * 1', null],
    ['*/15 * * * *', null],
    ['30 4 * * 1-5', null],
    ['0 0 * * MON', null],
    ['0 0 * * * *', 'must be a five-field cron expression (minute hour day month weekday) or null, got 6 field(s)'],
    ['@daily', 'must be a five-field cron expression (minute hour day month weekday) or null, got 1 field(s)'],
    ['', 'must be a five-field cron expression (minute hour day month weekday) or null, got 0 field(s)'],
    ['0 0 30 2 *', 'is a cron expression that never fires'],
    ['0 25 * * *', 'is not a valid cron expression: hour 25 is out of range 0-23'],
    // croner reads a day or month of 0 as -1 and says so; the manifest's author wrote 0.
    ['0 0 0 * *', 'is not a valid cron expression: day 0 is out of range 1-31'],
    ['0 0 1 0 *', 'is not a valid cron expression: month 0 is out of range 1-12'],
    ['0 0 * * 8', 'is not a valid cron expression: weekday 8 is out of range 0-7'],
    ['*/30 0-5 1,15 */2 *', null],
    ['0 0 * * 1#2', null],
    ['0 0 * * 5L', null],
    ['0 0 13 * +5', 'is not a valid cron expression: weekday +5: "+" is not cron syntax'],
    ['*/60 * * * *', 'is not a valid cron expression: minute step 60 is out of range 1-59'],
    ['0 0 * * */7', 'is not a valid cron expression: weekday step 7 is out of range 1-6'],
    ['*/0 * * * *', 'is not a valid cron expression: minute step 0 is out of range 1-59'],
    ['*/59 */23 */31 */12 */6', null],
    // Nakama reads 7 (and SUN) as day 0: a range to it is empty there, a board that never resets.
    ['0 0 * * 5-7', 'is not a valid cron expression: weekday range 5-7 ends at Sunday, which Nakama counts as day 0, at the start of the week: list Sunday as 0 instead (e.g. 5-6,0)'],
    ['0 0 * * MON-SUN', 'is not a valid cron expression: weekday range MON-SUN ends at Sunday, which Nakama counts as day 0, at the start of the week: list Sunday as 0 instead (e.g. 5-6,0)'],
    ['0 0 * * 5-6,0', null],
    ['0 0 * * 7', null],
    ['0 0 * * 7-7', null],
    ['0 0 * * 7-sun', null],
    // From Sunday to Sunday: every day to croner (it reads `-sun` as `-7`), Sunday alone to cronexpr.
    ['0 0 * * sun-SUN', 'is not a valid cron expression: weekday range sun-SUN runs from Sunday to Sunday, every day to some cron readers and Sunday alone to Nakama: write * for every day, or 0 for Sunday'],
    ['0 0 * * sun-7/2', 'is not a valid cron expression: weekday range sun-7 runs from Sunday to Sunday, every day to some cron readers and Sunday alone to Nakama: write * for every day, or 0 for Sunday'],
    ['0 0 * * 0-7', 'is not a valid cron expression: weekday range 0-7 runs from Sunday to Sunday, every day to some cron readers and Sunday alone to Nakama: write * for every day, or 0 for Sunday'],
    // Every range of a list is read, not only the first.
    ['0 0 * * 1-2,5-7', 'is not a valid cron expression: weekday range 5-7 ends at Sunday, which Nakama counts as day 0, at the start of the week: list Sunday as 0 instead (e.g. 5-6,0)'],
    // Leading zeros are the numbers they say (Nakama is sent them without): `07` is a Sunday too.
    ['00 00 01 01 *', null],
    ['000 0 * * 01', null],
    // Found in review: `07/2` was handed to croner as `07-6/2`, a range from 7 down to 6.
    ['0 0 * * 07/2', null],
    ['0 0 * * 5-07', 'is not a valid cron expression: weekday range 5-7 ends at Sunday, which Nakama counts as day 0, at the start of the week: list Sunday as 0 instead (e.g. 5-6,0)'],
    // Only leading zeros go: the number refused is the one written, not `10`.
    ['0 0 * * 100', 'is not a valid cron expression: weekday 100 is out of range 0-7'],
    ['0 0 1-7 * *', null],
    // N/step is N to the field's end in cronexpr (croner refuses the form; it is read as that range).
    ['5/15 1/2 1/10 jan/5 mon/2', null],
    ['0 0 * * 7/3', null],
    ['0 0 x * *', 'is not a valid cron expression: CronPattern: configuration entry 3 (x) contains illegal characters.'],
  ]
  for (const [expr, problem] of cases) t.equal(cronProblem(expr), problem, JSON.stringify(expr))
})

t.test('Nakama is sent a schedule without leading zeros, which its cronexpr reads as croner reads the one written', async (t) => {
  // Found by an audit: cronexpr's month and weekday tables lack `01`…`09` (read as 0), and `000` fits none of its patterns.
  const cases: [string, string][] = [
    ['0 0 * * 01', '0 0 * * 1'],
    ['0 0 1 06 *', '0 0 1 6 *'],
    ['000 00 * * *', '0 0 * * *'],
    ['*/005 * * * 1-05', '*/5 * * * 1-5'],
    ['0 0 * * 5#03', '0 0 * * 5#3'],
    ['0 10 10,20 10 0', '0 10 10,20 10 0'],
    ['30 4 1-31/10 * 1,3', '30 4 1-31/10 * 1,3'],
  ]
  const now = Date.parse('2026-12-02T00:00:00Z')
  for (const [written, sent] of cases) {
    t.equal(withoutLeadingZeros(written), sent, JSON.stringify(written))
    t.equal(nextReset(sent, now), nextReset(written, now), `${JSON.stringify(written)}: the same next reset to croner`)
  }
  t.equal(nextReset('0 0 * * 07/2', now), nextReset('0 0 * * 7/2', now), '07/2 is 7/2')
})

t.test('a detail is re-serialized once its nextResetAt has passed, with a new ETag', async (t) => {
  const base = JSON.parse(readFileSync(path.join(ROOT, 'test/fixtures/catalogue/valid/broken-game.json'), 'utf8'))
  base.leaderboards.configs.main.resetSchedule = '0 * * * *'
  const start = Date.parse('2026-01-01T10:30:00Z')
  const built = buildCatalogue([{ file: 'broken-game.json', id: 'broken-game', text: JSON.stringify(base) }], start)
  const catalogue = built.catalogue!
  const details = (at: number) => JSON.parse(catalogue.detail('broken-game', at)!.identity.body.toString()).leaderboardDetails.main
  const first = catalogue.detail('broken-game', start)!
  t.equal(details(start).nextResetAt, '2026-01-01T11:00:00.000Z')
  t.equal(first.expiresAt, Date.parse('2026-01-01T11:00:00Z'))
  t.equal(catalogue.detail('broken-game', Date.parse('2026-01-01T10:59:59.999Z')), first, 'the same bytes until the reset')
  const after = catalogue.detail('broken-game', Date.parse('2026-01-01T11:00:00Z'))!
  t.not(after, first)
  t.not(after.identity.etag, first.identity.etag)
  t.equal(details(Date.parse('2026-01-01T11:00:00Z')).nextResetAt, '2026-01-01T12:00:00.000Z')
  t.equal(catalogue.detail('broken-game', Date.parse('2026-01-01T11:30:00Z')), after, 'then kept again')
  // The clock stepped back an hour: the next reset is 10:00, not the 12:00 the bytes name.
  t.equal(details(Date.parse('2026-01-01T09:30:00Z')).nextResetAt, '2026-01-01T10:00:00.000Z', 'a clock stepped back is told the truth of its time')
  t.equal(catalogue.detail('other', start), undefined)
  t.equal(catalogue.list.expiresAt, Infinity, 'the list carries no reset times')
})

t.test('fields whose values the spec lists as "values seen" take any text; "allowed values" stay closed', async (t) => {
  const base = JSON.parse(readFileSync(path.join(ROOT, 'test/fixtures/catalogue/valid/broken-game.json'), 'utf8'))
  base.theme = 'ocean-night'
  base.leaderboards.configs.main = { type: 'points', label: 'Points' }
  const capture = JSON.parse(readFileSync(path.join(ROOT, 'test/fixtures/catalogue/bad-capture/broken-game.json'), 'utf8')).verifiedPlayCapture
  base.verifiedPlayCapture = { ...capture, source: 'capture-on-demand', result: 'error' }
  const text = JSON.stringify(base)
  const built = buildCatalogue([{ file: 'broken-game.json', id: 'broken-game', text }], 0)
  t.strictSame(built.problems, [], 'a new theme, board type and capture result are not problems')
  const catalogue = built.catalogue!
  const detail = JSON.parse(catalogue.detail('broken-game', 0)!.identity.body.toString())
  const { leaderboardDetails, success, ...game } = detail
  t.equal(success, true)
  t.strictSame(game, JSON.parse(text), 'served as written')
  t.strictSame(leaderboardDetails.main, { operator: 'best', sortOrder: 'desc', resetSchedule: null, nextResetAt: null }, 'a type CONTRACT §5 does not name resolves to best, desc')

  for (const [field, value] of [['status', 'alpha'], ['integrationType', 'canvas']] as const) {
    const bad = buildCatalogue([{ file: 'broken-game.json', id: 'broken-game', text: JSON.stringify({ ...base, [field]: value }) }], 0)
    t.equal(bad.catalogue, null, `${field} ${value} is refused`)
    t.match(bad.problems, [{ file: 'broken-game.json', path: `$.${field}`, message: /^must be one of / }])
  }
  const empty = buildCatalogue([{ file: 'broken-game.json', id: 'broken-game', text: JSON.stringify({ ...base, theme: '' }) }], 0)
  t.equal(empty.catalogue, null, 'an empty theme is still refused')
})

t.test('two games declaring one board is a catalogue error when any resolved field differs, and only then', async (t) => {
  const base = JSON.parse(readFileSync(path.join(ROOT, 'test/fixtures/catalogue/valid/broken-game.json'), 'utf8'))
  const game = (id: string, config: Record<string, unknown>) => ({
    file: `${id}.json`,
    id,
    text: JSON.stringify({ ...base, id, playUrl: `/games/${id}/index.html?embed=1`, leaderboards: { default: 'shared', ids: ['shared'], configs: { shared: config } } }),
  })
  const conflict = (a: Record<string, unknown>, b: Record<string, unknown>) => buildCatalogue([game('a-game', a), game('b-game', b)], 0).problems
  const declared = (difference: string) => [{ file: 'b-game.json', path: '$.leaderboards.ids[0]', message: `leaderboard "shared" is also declared by a-game.json with a different config (${difference})` }]
  t.strictSame(conflict({}, { operator: 'set' }), declared('operator "best" vs "set"'))
  t.strictSame(conflict({}, { sortOrder: 'asc' }), declared('sortOrder "desc" vs "asc"'))
  t.strictSame(conflict({}, { resetSchedule: '0 0 * * 1' }), declared('resetSchedule null vs "0 0 * * 1"'))
  t.strictSame(conflict({}, { authoritative: true }), declared('authoritative false vs true'))
  t.strictSame(conflict({ type: 'time_best', resetSchedule: '0 0 * * 1' }, { sortOrder: 'ascending', resetSchedule: ' 0  0 * * 1', authoritative: false }), [], 'written differently, resolved the same')
})

t.test('a detail with several reset schedules expires at the earliest next reset', async (t) => {
  const base = JSON.parse(readFileSync(path.join(ROOT, 'test/fixtures/catalogue/valid/broken-game.json'), 'utf8'))
  base.leaderboards = { default: 'daily', ids: ['daily', 'hourly'], configs: { daily: { resetSchedule: '0 0 * * *' }, hourly: { resetSchedule: '0 * * * *' } } }
  const start = Date.parse('2026-01-01T10:30:00Z')
  const catalogue = buildCatalogue([{ file: 'broken-game.json', id: 'broken-game', text: JSON.stringify(base) }], start).catalogue!
  const next = (at: number) => {
    const details = JSON.parse(catalogue.detail('broken-game', at)!.identity.body.toString()).leaderboardDetails
    return [details.daily.nextResetAt, details.hourly.nextResetAt]
  }
  t.same(next(start), ['2026-01-02T00:00:00.000Z', '2026-01-01T11:00:00.000Z'])
  t.equal(catalogue.detail('broken-game', start)!.expiresAt, Date.parse('2026-01-01T11:00:00Z'), 'the hourly reset, the earlier one')
  t.same(next(Date.parse('2026-01-01T11:00:00Z')), ['2026-01-02T00:00:00.000Z', '2026-01-01T12:00:00.000Z'], 'past it, the hourly board names its next reset')
})

t.test('a capture time with an offset that names no real moment is refused, a real offset is not', async (t) => {
  const base = JSON.parse(readFileSync(path.join(ROOT, 'test/fixtures/catalogue/valid/broken-game.json'), 'utf8'))
  const capture = JSON.parse(readFileSync(path.join(ROOT, 'test/fixtures/catalogue/bad-capture/broken-game.json'), 'utf8')).verifiedPlayCapture
  const build = (capturedAt: string) => {
    const text = JSON.stringify({ ...base, verifiedPlayCapture: { ...capture, source: 'capture-on-demand', capturedAt } })
    return buildCatalogue([{ file: 'broken-game.json', id: 'broken-game', text }], 0)
  }
  for (const at of ['2026-09-14T10:00:00+05:30', '2026-09-14T10:00:00-23:59', '2026-09-14T10:00:00Z']) {
    t.strictSame(build(at).problems, [], `${at} is accepted`)
  }
  for (const at of ['2026-09-14T10:00:00+24:00', '2026-09-14T10:00:00+05:60', '2026-09-14T10:00:00-99:00']) {
    const built = build(at)
    t.equal(built.catalogue, null, `${at} is refused`)
    t.strictSame(built.problems, [{ file: 'broken-game.json', path: '$.verifiedPlayCapture.capturedAt', message: 'is not a real date and time' }], `${at}: one problem line`)
  }
})

t.test('every problem of a manifest is a line of its own, past TypeBox\'s cap on errors', async (t) => {
  // Found by an audit: lines stopped at 100 a manifest, with no word that any were left out.
  const base = JSON.parse(readFileSync(path.join(ROOT, 'test/fixtures/catalogue/valid/broken-game.json'), 'utf8'))
  base.screenshots = Array.from({ length: 120 }, (_, i) => `https://cdn.example.com/${i}.png`)
  for (let i = 0; i < 150; i++) base[`extra${i}`] = i
  const { problems } = buildCatalogue([{ file: 'broken-game.json', id: 'broken-game', text: JSON.stringify(base) }], 0)
  t.equal(problems.filter((p) => p.path.startsWith('$.screenshots[')).length, 120, 'each screenshot')
  t.equal(problems.filter((p) => p.message === 'is not a known field').length, 150, 'each unknown field')
  t.match(problems.find((p) => p.path === '$.screenshots[119]'), { file: 'broken-game.json', message: /^must be a relative path/ })
})

t.test('a key given twice in one object is a problem wherever it stands, manifest or capture file; JSON.parse would keep the last unread', async (t) => {
  // Found by an audit: `"status": "bogus-status", "status": "available"` passed and was served as available.
  const text = readFileSync(path.join(ROOT, 'test/fixtures/catalogue/valid/broken-game.json'), 'utf8')
  const base = JSON.parse(text)
  const twice = (json: string, key: string, first: string): string => json.replace(`"${key}":`, `"${key}": ${first}, "${key}":`)
  const build = (manifest: string, capture?: string) =>
    buildCatalogue([{ file: 'broken-game.json', id: 'broken-game', text: manifest, ...(capture === undefined ? {} : { capture: { file: 'games/broken-game/latest.json', text: capture } }) }], 0)
  const message = 'is given more than once in its object (JSON.parse would keep the last)'
  t.strictSame(build(twice(JSON.stringify(base), 'status', '"bogus-status"')).problems, [{ file: 'broken-game.json', path: '$.status', message }], 'at the top')
  // The same key however it is spelled: JSON reads `\u0073tatus` as `status`.
  t.strictSame(build(JSON.stringify(base).replace('"status":', '"\\u0073tatus": "beta", "status":')).problems, [{ file: 'broken-game.json', path: '$.status', message }], 'spelled with an escape')
  const nested = JSON.stringify({ ...base, leaderboards: { ...base.leaderboards, configs: { main: { type: 'points' } } } })
  t.strictSame(build(nested.replace('"type":"points"', '"type":"points","type":"time_best"')).problems, [{ file: 'broken-game.json', path: '$.leaderboards.configs.main.type', message }], 'nested')
  const listed = JSON.stringify({ ...base, characters: [{ id: 'a' }, { id: 'b' }] })
  t.strictSame(build(listed.replace('{"id":"b"}', '{"id":"b","id":"c"}')).problems, [{ file: 'broken-game.json', path: '$.characters[1].id', message }], 'in an array\'s object, the index counted')
  const both = build(twice(JSON.stringify({ ...base, status: 'bogus-status' }), 'title', '"x"')).problems
  t.same(both.map((p) => p.path).sort(), ['$.status', '$.title'], 'the schema\'s problems too, in the same run')
  t.strictSame(build(JSON.stringify({ ...base, tags: ['status', 'status'], description: '"status": 1, "status": 2' })).problems, [], 'equal strings that are no keys are nothing')
  // An escaped quote ends no string: with one quote in a value, the keys after it are still keys.
  const quoted = JSON.stringify({ ...base, description: 'The 12" edition' })
  t.strictSame(build(quoted).problems, [], 'a value holding a quote')
  t.strictSame(build(twice(quoted, 'status', '"bogus-status"')).problems, [{ file: 'broken-game.json', path: '$.status', message }], 'a key given twice after a value holding a quote')
  const { verifiedPlayCapture: _, ...bare } = base
  const capture = JSON.parse(readFileSync(path.join(ROOT, 'test/fixtures/catalogue/bad-capture/broken-game.json'), 'utf8')).verifiedPlayCapture
  const captureText = twice(JSON.stringify({ ...capture, source: 'capture-on-demand' }), 'source', '"elsewhere"')
  t.strictSame(build(JSON.stringify(bare), captureText).problems, [{ file: 'games/broken-game/latest.json', path: '$.source', message }], 'in the capture file')
  t.strictSame(build(text).problems, [], 'the valid manifest as it is')
})
