import t from 'tap'
import { spawn } from 'node:child_process'
import { existsSync, readdirSync } from 'node:fs'
import path from 'node:path'
import { ROOT } from './helpers/platform.js'

// The platform's black-box API tests of the earlier issues, run again with TEST_BACKEND=nakama:
// startPlatform then gives each DATA_DIR its own fake Nakama (or uses NAKAMA_URL) and starts the
// platform with GAME_BACKEND=nakama. Subtests that only make sense on the embedded backend are
// filtered out by name (tap's grep, inverted); the README's Nakama section lists them and why.

const DIST = path.join(ROOT, 'dist/test')

/** Files run on Nakama, each with the subtest names (per nesting level) left out and why. */
const SUITE: Record<string, { exclude?: string[][]; why?: string; platform?: false }> = {
  'auth-limit.test.js': {},
  'catalogue-api.test.js': {},
  'catalogue-check.test.js': { platform: false },
  'auth.test.js': {
    exclude: [[
      'register: a name taken ignoring case is 409 USERNAME_TAKEN and creates nothing',
      'POST /api/auth/login signs in ignoring the case of the name; wrong credentials are 401',
      'after a restart: a logged-out cookie stays refused, a live one still works',
    ]],
    why: 'Nakama compares usernames exactly (CONTRACT §3); the restart test signs in with another case at its end',
  },
  'auth-tokens.test.js': {
    exclude: [[], ['answers spec 2.6 with HS256 JWTs carrying Nakama claims, verifiable with the keys in DATA_DIR']],
    why: "Nakama signs tokens with its own keys, not with keys in DATA_DIR",
  },
  'username.test.js': {
    exclude: [[
      'a rename answers the new name, shows in the session, and the next backend token carries it',
      'a name taken by another user, ignoring case, is 409 USERNAME_TAKEN and spends nothing',
    ]],
    why: 'Nakama compares usernames exactly; the first signs in with another case at its end (nakama-platform covers the rest)',
  },
  'session.test.js': {},
  'launch.test.js': {
    platform: false,
    exclude: [['POST /api/games/{id}/launch']],
    why: 'reads the launches table of the SQLite file (nakama-platform checks the launch in Nakama storage)',
  },
  'leaderboard-http.test.js': {
    exclude: [[
      'bad submissions answer the contract error and change nothing',
      '__proto__ and constructor keys are stored as data',
      'submit needs a session; floods get 429 with Retry-After',
    ]],
    why: 'read leaderboard_records from the SQLite file (nakama-platform checks the stored records in the fake)',
  },
}

/** Embedded-only or not about the game backend: never run on Nakama. */
const NOT_ON_NAKAMA = new Set([
  'durability.test.js', // SIGKILL of the platform mid-write: durability is Nakama's (PostgreSQL's) there
  'leaderboard-store.test.js', 'rank-index.test.js', 'leaderboard.test.js', 'limiter.test.js', // in-process units of the embedded backend
  'systemd.test.js', 'nginx.test.js', // deployment of the embedded configuration
  'bridge-lifecycle.test.js', 'bridge-output.test.js', 'bridge-protocol.test.js', 'bridge-security.test.js', // the bridge has no game backend
  // Spawns `bin/platform users` with DATA_DIR only, so on Nakama it would edit an embedded database;
  // nakama-platform.test.ts runs the sub-command against Nakama instead.
  'users-cli.test.js',
])

function pattern(names: string[]): string {
  if (names.length === 0) return '^$'
  return `/^(${names.map((n) => n.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|')})$/`
}

function run(file: string, exclude: string[][]): Promise<{ code: number | null; output: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, TEST_BACKEND: 'nakama' }
  if (exclude.length) {
    env.TAP_GREP = exclude.map(pattern).join('\n')
    env.TAP_INVERT = '1'
  }
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [path.join(DIST, file)], { env, cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    child.stdout.on('data', (d: Buffer) => (output += d))
    child.stderr.on('data', (d: Buffer) => (output += d))
    child.on('exit', (code) => resolve({ code, output }))
  })
}

const present = Object.keys(SUITE).filter((f) => existsSync(path.join(DIST, f)))
const others = readdirSync(DIST).filter((f) => f.endsWith('.test.js') && !f.startsWith('nakama') && !(f in SUITE) && !NOT_ON_NAKAMA.has(f))
if (others.length) t.comment(`not run on Nakama (not listed in test/nakama-suite.test.ts): ${others.join(', ')}`)

t.test('the API tests pass on the Nakama backend', async (t) => {
  // Two at a time: each file starts its own platforms; the machine has two cores.
  const queue = [...present]
  const results = new Map<string, { code: number | null; output: string }>()
  await Promise.all([0, 1].map(async () => {
    for (let file = queue.shift(); file; file = queue.shift()) results.set(file, await run(file, SUITE[file]!.exclude ?? []))
  }))
  for (const file of present) {
    const { code, output } = results.get(file)!
    const failures = output.split('\n').filter((l) => /^\s*not ok /.test(l))
    const why = SUITE[file]!.why ? ` (left out: ${SUITE[file]!.why})` : ''
    t.equal(code, 0, `${file} on Nakama${why}`, { failures, diagnostic: code !== 0 })
    if (SUITE[file]!.platform !== false) t.match(output, /nakama: using the (fake|real) Nakama/, `${file} ran its platforms on Nakama`)
  }
})
