import t from 'tap'
import { execFile, execFileSync } from 'node:child_process'
import { copyFileSync, mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { ROOT, startPlatform, tempDir } from './helpers/platform.js'

const FIXTURES = path.join(ROOT, 'test/fixtures/catalogue')
const SCREENSHOTS = path.join(ROOT, 'test/fixtures/screenshots')

interface Run {
  code: number | null
  stdout: string
  stderr: string
}

/** Run `bin/platform check` (the real executable) against a manifests directory. */
function check(manifestsDir: string, screenshotsDir = tempDir(), extraArgs: string[] = []): Promise<Run> {
  return new Promise((resolve) => {
    const env = { PATH: process.env.PATH, HOME: process.env.HOME, MANIFESTS_DIR: manifestsDir, SCREENSHOTS_DIR: screenshotsDir, DATA_DIR: tempDir() }
    execFile(path.join(ROOT, 'bin/platform'), ['check', ...extraArgs], { env, cwd: ROOT }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : null) : 0, stdout, stderr })
    })
  })
}

const F = 'broken-game.json'

/** One fixture directory per rule of CONTRACT §5, with the exact lines `check` must print. */
const CASES: Record<string, string[]> = {
  'missing-field': [`${F}: $.title: is required`],
  'wrong-type': [`${F}: $.rating.count: must be an integer`],
  'bad-enum': [`${F}: $.status: must be one of "available", "beta"`],
  'unknown-field': [`${F}: $.color: is not a known field`],
  // JSON.parse keeps the last of two `status` keys: the first, not an allowed value, would go unread.
  'duplicate-key': [`${F}: $.status: is given more than once in its object (JSON.parse would keep the last)`],
  'min-above-max': [`${F}: $.playerCount.min: must be <= $.playerCount.max (4 > 2)`],
  'iframe-playurl': [`${F}: $.playUrl: must carry the query embed=1 for an iframe-themeable game`],
  'native-playurl': [`${F}: $.playUrl: must be "/play/broken-game" for a native-component game`],
  'absolute-thumbnail': [`${F}: $.thumbnail: must be a relative path (no scheme, no //, no backslashes, spaces or control characters)`],
  // URL parsing reads `\` as `/`: `/\evil.example/x` would resolve to another site.
  'backslash-paths': [
    `${F}: $.thumbnail: must be a relative path (no scheme, no //, no backslashes, spaces or control characters)`,
    `${F}: $.playUrl: must be a relative path (no scheme, no //, no backslashes, spaces or control characters)`,
    `${F}: $.screenshots[0]: must be a relative path (no scheme, no //, no backslashes, spaces or control characters)`,
    `${F}: $.verifiedPlayCapture.imageUrl: must be a relative path (no backslashes, spaces or control characters) whose query carries v=<timestamp>`,
  ],
  // Date.parse rolls 2026-02-30 over to March 2 and reads 24:00 as the next day.
  // URL parsing strips a leading control character: `\u0001//evil.example/` would leave the site.
  'control-character-paths': [
    `${F}: $.thumbnail: must be a relative path (no scheme, no //, no backslashes, spaces or control characters)`,
    `${F}: $.playUrl: must be a relative path (no scheme, no //, no backslashes, spaces or control characters)`,
    `${F}: $.screenshots[0]: must be a relative path (no scheme, no //, no backslashes, spaces or control characters)`,
    `${F}: $.verifiedPlayCapture.imageUrl: must be a relative path (no backslashes, spaces or control characters) whose query carries v=<timestamp>`,
  ],
  // A `?` after the `#` is the fragment's, not a query.
  'fragment-embed': [`${F}: $.playUrl: must carry the query embed=1 for an iframe-themeable game`],
  // Served as written: a byte that is not UTF-8 would be served as U+FFFD.
  'invalid-utf8': [`${F}: $: is not valid UTF-8`],
  'impossible-dates': [`${F}: $.lastUpdated: is not a real date and time`, `${F}: $.verifiedPlayCapture.capturedAt: is not a real date and time`],
  'default-not-in-ids': [`${F}: $.leaderboards.default: "weekly" is not among leaderboards.ids`],
  'config-key-not-in-ids': [`${F}: $.leaderboards.configs["extra-board"]: "extra-board" is not among leaderboards.ids`],
  'cron-four-fields': [
    `${F}: $.leaderboards.configs.main.resetSchedule: must be a five-field cron expression (minute hour day month weekday) or null, got 4 field(s)`,
  ],
  'cron-invalid': [`${F}: $.leaderboards.configs.main.resetSchedule: is not a valid cron expression: minute 61 is out of range 0-59`],
  // Nakama's cronexpr refuses croner's `+` (its "day and weekday" modifier) and a step past the field's largest value,
  // and reads a weekday range to 7 or SUN as empty.
  'cron-not-nakama': [
    `${F}: $.leaderboards.configs.main.resetSchedule: is not a valid cron expression: weekday +5: "+" is not cron syntax`,
    `${F}: $.leaderboards.configs.daily.resetSchedule: is not a valid cron expression: hour step 24 is out of range 1-23`,
    `${F}: $.leaderboards.configs.weekend.resetSchedule: is not a valid cron expression: weekday range fri-sun ends at Sunday, which Nakama counts as day 0, at the start of the week: list Sunday as 0 instead (e.g. 5-6,0)`,
  ],
  'cron-not-string': [`${F}: $.leaderboards.configs.main.resetSchedule: must be a five-field cron expression or null`],
  'file-name-not-id': [`${F}: $.id: must equal the file name without .json ("broken-game")`],
  'duplicate-board-id': [`${F}: $.leaderboards.ids[1]: duplicate leaderboard id "main"`],
  'duplicate-character-id': [`${F}: $.characters[2].id: duplicate id "scout"`],
  'reserved-board-id': [`${F}: $.leaderboards.ids[1]: "submit" is reserved: /api/leaderboards/submit is where scores are sent`],
  'disabled-with-fields': [
    `${F}: $.leaderboards.default: must be absent when leaderboards.enabled is false`,
    `${F}: $.leaderboards.ids: must be absent when leaderboards.enabled is false`,
    `${F}: $.leaderboards.configs: must be absent when leaderboards.enabled is false`,
  ],
  'missing-default': [`${F}: $.leaderboards.default: is required unless leaderboards.enabled is false`],
  'matchmaking-without-reason': [`${F}: $.matchmaking.reason: is required when matchmaking.enabled is false`],
  'bad-board-type': [`${F}: $.leaderboards.configs.main.type: must be a string`],
  'bad-sort-order': [`${F}: $.leaderboards.configs.main.sortOrder: must be one of "desc", "asc", "descending", "ascending"`],
  // JSON.parse would round it: the file would be served as 12345678901234567000.
  'unsafe-integer': [`${F}: $.rating.count: must be <= 9007199254740991`, `${F}: $.leaderboards.configs.main.default: must be <= 9007199254740991`],
  'bad-version': [`${F}: $.version: must be a semantic version like 1.2.3`],
  'bad-capture': [`${F}: $.verifiedPlayCapture.source: must be one of "capture-on-demand"`],
  'several-problems': [
    `${F}: $.engine: is required`,
    `${F}: $.rating.average: must be <= 5`,
    `${F}: $.status: must be one of "available", "beta"`,
  ],
  // One run reports every problem of a file: the rules run beside the schema's type problems.
  'schema-and-rule-problems': [
    `${F}: $.rating.count: must be an integer`,
    `${F}: $.playerCount.min: must be <= $.playerCount.max (4 > 2)`,
    `${F}: $.leaderboards.configs.main.resetSchedule: is a cron expression that never fires`,
  ],
  // Fields the rules read, each of the wrong type: the schema's lines only, no rule trips on them.
  'wrong-types-everywhere': [
    `${F}: $.id: must be a string`,
    `${F}: $.playerCount.min: must be an integer`,
    `${F}: $.playUrl: must be a string`,
    `${F}: $.lastUpdated: must be a string`,
    `${F}: $.leaderboards.default: must be a string`,
    `${F}: $.leaderboards.ids: must be an array`,
    `${F}: $.leaderboards.configs.main: must be an object`,
    `${F}: $.matchmaking: must be an object`,
    `${F}: $.characters: must be an array`,
  ],
  'board-conflict': [
    'b-game.json: $.leaderboards.ids[0]: leaderboard "shared" is also declared by a-game.json with a different config (operator "best" vs "set")',
  ],
}

t.test('bin/platform check prints the exact problem line of each broken manifest and exits 1', async (t) => {
  const dirs = readdirSync(FIXTURES).filter((d) => !['valid', 'board-shared-same-config', 'capture-from-screenshots', 'invalid-json'].includes(d))
  t.same(dirs.sort(), Object.keys(CASES).sort(), 'every fixture directory has its expected lines')
  const entries = Object.entries(CASES)
  const runs: Run[] = []
  // Four at a time: each run is a process start.
  for (let i = 0; i < entries.length; i += 4) {
    runs.push(...(await Promise.all(entries.slice(i, i + 4).map(([name]) => check(path.join(FIXTURES, name))))))
  }
  for (const [i, [name, lines]] of entries.entries()) {
    const run = runs[i]!
    t.equal(run.code, 1, `${name}: exit 1`)
    t.equal(run.stderr, lines.map((l) => l + '\n').join(''), `${name}: problem lines`)
    t.notMatch(run.stderr, /\n\s+at /, `${name}: no stack trace`)
  }
})

t.test('a key or a file name with a line break or an escape still makes one line per problem', async (t) => {
  const dir = tempDir()
  const manifest = readFileSync(path.join(FIXTURES, 'config-key-not-in-ids', F), 'utf8').replace('"extra-board"', '"extra\\nboard\\u001b[2J"')
  writeFileSync(path.join(dir, F), manifest)
  writeFileSync(path.join(dir, 'we\nird.json'), '{"id": 1}')
  const run = await check(dir)
  t.equal(run.code, 1)
  const lines = run.stderr.split('\n').slice(0, -1)
  t.ok(lines.length > 2, 'the odd file has problems of its own')
  t.ok(lines.every((l) => l.startsWith(`${F}: $.`) || l.startsWith('we\\nird.json: $')), 'each line starts with its file name, escaped')
  t.ok(lines.includes(`${F}: $.leaderboards.configs["extra\\nboard\\u001b[2J"]: "extra\\nboard\\u001b[2J" is not among leaderboards.ids`), 'the key is escaped in the path and in the message')
  t.notMatch(run.stderr, /\u001b/, 'no raw escape character reaches the terminal')
})

t.test('a file that is not JSON names the parser error', async (t) => {
  const dir = path.join(FIXTURES, 'invalid-json')
  let message = ''
  try {
    JSON.parse(readFileSync(path.join(dir, F), 'utf8'))
  } catch (err) {
    message = (err as Error).message
  }
  const run = await check(dir)
  t.equal(run.code, 1)
  t.equal(run.stderr, `${F}: $: is not valid JSON (${message})\n`)
})

t.test('a leaderboard id of digits is a key in the problem path ("2026"), an array position an index', async (t) => {
  const dir = tempDir()
  const game = JSON.parse(readFileSync(path.join(FIXTURES, 'valid', F), 'utf8'))
  game.genre = [7]
  game.leaderboards = { default: '2026', ids: ['2026'], configs: { 2026: { sortOrder: 'up' } } }
  writeFileSync(path.join(dir, F), JSON.stringify(game))
  t.strictSame(await check(dir), {
    code: 1,
    stdout: '',
    stderr: `${F}: $.genre[0]: must be a string\n${F}: $.leaderboards.configs["2026"].sortOrder: must be one of "desc", "asc", "descending", "ascending"\n`,
  })
})

t.test('a manifest saved with a UTF-8 byte order mark (as Windows editors write it) passes check', async (t) => {
  const dir = tempDir()
  writeFileSync(path.join(dir, F), Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), readFileSync(path.join(FIXTURES, 'valid', F))]))
  t.strictSame(await check(dir), { code: 0, stdout: 'catalogue ok: 1 games, 1 leaderboards\n', stderr: '' })
})

t.test('a file that is not JSON is named without its text: a copy of a secret shows none of it', async (t) => {
  const dir = tempDir()
  writeFileSync(path.join(dir, 'leak.json'), 'MFYeqWcxkA-not-for-the-log\n')
  const run = await check(dir)
  t.equal(run.code, 1)
  t.equal(run.stderr, 'leak.json: $: is not valid JSON (an unexpected character; the text around it is not shown)\n')
})

t.test('a missing manifests directory is a bad MANIFESTS_DIR: exit 2 and its one config line, not a catalogue problem', async (t) => {
  const dir = path.join(tempDir(), 'nowhere')
  const run = await check(dir)
  t.equal(run.code, 2)
  t.equal(run.stderr, `config: MANIFESTS_DIR: ${JSON.stringify(dir)} does not exist; expected a directory of game manifests\n`)
})

t.test('two games may share a leaderboard id when its resolved config is the same (a schedule written with leading zeros in one is the same schedule)', async (t) => {
  const run = await check(path.join(FIXTURES, 'board-shared-same-config'))
  t.equal(run.stderr, '')
  t.equal(run.code, 0)
  t.equal(run.stdout, 'catalogue ok: 2 games, 1 leaderboards\n')
})

t.test('an omitted capture is read from SCREENSHOTS_DIR and validated there', async (t) => {
  const dir = path.join(FIXTURES, 'capture-from-screenshots')
  t.equal((await check(dir)).code, 0, 'no capture file: null')
  t.equal((await check(dir, path.join(SCREENSHOTS, 'good'))).code, 0, 'a good capture file')
  const bad = await check(dir, path.join(SCREENSHOTS, 'bad'))
  const file = path.join(SCREENSHOTS, 'bad/games/broken-game/latest.json')
  t.equal(bad.code, 1)
  t.equal(
    bad.stderr,
    [
      `${file}: $.playUrl: is required`,
      `${file}: $.imageUrl: is required`,
      `${file}: $.metadataUrl: is required`,
      `${file}: $.source: is required`,
      `${file}: $.viewport: is required`,
      `${file}: $.notes: is required`,
      `${file}: $.capturedAt: must be an ISO 8601 timestamp with Z or an offset`,
    ].map((l) => l + '\n').join(''),
  )
})

t.test('a capture file that cannot be read is a problem only for a manifest that omits its own', async (t) => {
  const screenshots = tempDir()
  mkdirSync(path.join(screenshots, 'games/broken-game/latest.json'), { recursive: true })
  const own = await check(path.join(FIXTURES, 'valid'), screenshots)
  t.equal(own.stderr, '', 'the manifest carries its capture: the file is never read')
  t.equal(own.code, 0)
  const omitted = await check(path.join(FIXTURES, 'capture-from-screenshots'), screenshots)
  t.equal(omitted.stderr, `${path.join(screenshots, 'games/broken-game/latest.json')}: $: cannot be read (EISDIR)\n`)
  t.equal(omitted.code, 1)
  // A FIFO would block the read, and the start with it.
  const fifo = tempDir()
  mkdirSync(path.join(fifo, 'games/broken-game'), { recursive: true })
  execFileSync('mkfifo', [path.join(fifo, 'games/broken-game/latest.json')])
  t.equal((await check(path.join(FIXTURES, 'valid'), fifo)).code, 0, 'a FIFO where no capture is needed is never opened')
  const blocked = await check(path.join(FIXTURES, 'capture-from-screenshots'), fifo)
  t.equal(blocked.stderr, `${path.join(fifo, 'games/broken-game/latest.json')}: $: cannot be read (not a regular file)\n`)
})

t.test('every file in manifests/ passes bin/platform check', async (t) => {
  const run = await check(path.join(ROOT, 'manifests'))
  t.equal(run.stderr, '')
  t.equal(run.code, 0)
  const games = readdirSync(path.join(ROOT, 'manifests')).filter((f) => f.endsWith('.json')).length
  t.ok(games >= 12, 'at least 12 games')
  t.match(run.stdout, new RegExp(`^catalogue ok: ${games} games, \\d+ leaderboards\\n$`))
})

t.test('an invalid catalogue stops the start with exit 1 and the same lines', async (t) => {
  for (const name of ['min-above-max', 'board-conflict']) {
    const lines = CASES[name]!.map((l) => l + '\n').join('')
    const error = await startPlatform({ env: { MANIFESTS_DIR: path.join(FIXTURES, name) } }).then(
      () => new Error('started'),
      (err: Error) => err,
    )
    t.equal(error.message, `process exited (1) before ready: ${lines}`, `${name}: exit 1, only the problem lines on stderr`)
  }
})

t.test('an entry that cannot be read is one problem line of its own; every other file is still checked', async (t) => {
  const dir = tempDir()
  for (const name of readdirSync(path.join(FIXTURES, 'valid'))) copyFileSync(path.join(FIXTURES, 'valid', name), path.join(dir, name))
  copyFileSync(path.join(FIXTURES, 'wrong-type', F), path.join(dir, F))
  mkdirSync(path.join(dir, 'sub.json'))
  symlinkSync('/nonexistent/target', path.join(dir, 'zz-dangling.json'))
  // An editor's lock link is no manifest: skipped, not a problem.
  symlinkSync('/nonexistent/lock', path.join(dir, '.#broken-game.json'))
  const run = await check(dir)
  t.equal(run.code, 1)
  t.equal(run.stderr, [`sub.json: $: cannot be read (EISDIR)`, `zz-dangling.json: $: cannot be read (ENOENT)`, `${F}: $.rating.count: must be an integer`].map((l) => l + '\n').join(''))
})

t.test('bin/platform check takes no arguments: with one it prints the usage and exits 64', async (t) => {
  const run = await check(path.join(ROOT, 'manifests'), tempDir(), ['junk'])
  t.same(run, { code: 64, stdout: '', stderr: 'usage: platform [check | users grant|revoke <username> <role> | users list]\n' })
})
