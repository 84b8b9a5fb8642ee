import type { Test } from 'tap'
import { spawn } from 'node:child_process'
import { existsSync, readdirSync } from 'node:fs'
import path from 'node:path'
import { ROOT } from '../helpers/platform.js'

// The platform's black-box API tests of the earlier issues, run again with TEST_BACKEND=nakama:
// startPlatform then gives each DATA_DIR its own fake Nakama (never a real one) and starts the
// platform with GAME_BACKEND=nakama. Subtests that only make sense on the embedded backend are
// filtered out by name (tap's grep, inverted); the README's Nakama section lists them and why.

const DIST = path.join(ROOT, 'dist/test')

/** Files run on Nakama, each with the subtest names (per nesting level) left out and why. */
export const SUITE: Record<string, { exclude?: string[][]; why?: string; platform?: false }> = {
  'auth-limit.test.js': {
    exclude: [['failures the database will not record (a full disk) still limit the address: 500 for each, then 429']],
    why: 'makes the SQLite file refuse writes (limiter.test.ts covers the same rule over any backend)',
  },
  'catalogue-api.test.js': {},
  'catalogue-reload.test.js': {},
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
    exclude: [[
      'POST /api/games/{id}/launch: 401 without a session, a launch session recorded with one, 404 for an unknown game',
      'launch floods get 429 with Retry-After, and only accepted launches are recorded',
    ]],
    why: 'read the launches table of the SQLite file (nakama-platform checks the launch in Nakama storage)',
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
  'migrations.test.js', 'embedded-accounts.test.js', // the embedded backend's SQLite schema and transactions
  'durability.test.js', // SIGKILL of the platform mid-write: durability is Nakama's (PostgreSQL's) there
  'leaderboard-store.test.js', 'rank-index.test.js', 'leaderboard.test.js', 'limiter.test.js', // in-process units of the embedded backend
  'systemd.test.js', 'nginx.test.js', // deployment of the embedded configuration
  'bridge-lifecycle.test.js', 'bridge-output.test.js', 'bridge-protocol.test.js', 'bridge-security.test.js', // the bridge has no game backend
  'catalogue-check.test.js', 'catalogue-unit.test.js', 'config.test.js', 'http-core.test.js', 'http-core-process.test.js', // never reach the game backend
  'origin-check.test.js', 'http-limits.test.js', 'screenshots-serving.test.js', // refused or served before any backend call
  'terminal-browser.test.js', // a browser on the terminal page; the gate itself is terminal-routes
  // These spawn `bin/platform users` with DATA_DIR only, so on Nakama the grant would go to an
  // embedded database. With `...testBackendEnv(dataDir)` added to that environment, terminal-routes
  // passes on Nakama entirely and users-cli all but its case-insensitive grant (checked by hand);
  // nakama-platform.test.ts runs the sub-command against Nakama meanwhile.
  'users-cli.test.js', 'terminal-routes.test.js',
  'zz-adhoc-nginx.test.js',
])

function pattern(names: string[]): string {
  if (names.length === 0) return '^$'
  return `/^(${names.map((n) => n.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|')})$/`
}

function run(file: string, exclude: string[][]): Promise<{ code: number | null; output: string }> {
  // The per-file time limit the tap runner would give (.taprc).
  const env: NodeJS.ProcessEnv = { ...process.env, TEST_BACKEND: 'nakama', TAP_TIMEOUT: '300' }
  // Always the fakes: these tests use fixed names and expect a fresh backend per DATA_DIR.
  for (const name of ['NAKAMA_URL', 'NAKAMA_SERVER_KEY', 'NAKAMA_HTTP_KEY']) delete env[name]
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

/** Test files in dist/test that are neither run on Nakama nor listed as left out. */
export function unlisted(): string[] {
  return readdirSync(DIST).filter((f) => f.endsWith('.test.js') && !f.startsWith('nakama') && !(f in SUITE) && !NOT_ON_NAKAMA.has(f))
}

/** Each `not ok` line of a TAP output with the diagnostic block (`---` … `...`) that follows it. */
function failedBlocks(output: string): string[] {
  const blocks: string[] = []
  const lines = output.split('\n')
  for (let i = 0; i < lines.length; i++) {
    if (!/^\s*not ok /.test(lines[i]!)) continue
    const block = [lines[i]!]
    if (/^\s*---$/.test(lines[i + 1] ?? '')) {
      while (++i < lines.length) {
        block.push(lines[i]!)
        if (/^\s*\.\.\.$/.test(lines[i]!)) break
      }
    }
    blocks.push(block.join('\n'))
  }
  return blocks
}

/** Run `files` (those that exist) with TEST_BACKEND=nakama, one after the other, and assert each passed. */
export async function runOnNakama(t: Test, files: string[]): Promise<void> {
  for (const file of files.filter((f) => existsSync(path.join(DIST, f)))) {
    const { code, output } = await run(file, SUITE[file]!.exclude ?? [])
    const failures = failedBlocks(output)
    const why = SUITE[file]!.why ? ` (left out: ${SUITE[file]!.why})` : ''
    // A failed run shows its failed assertions and the end of its output (a crash prints only there).
    const extra = code === 0 ? {} : { failures, tail: output.slice(-6000), diagnostic: true }
    t.equal(code, 0, `${file} on Nakama${why}`, extra)
    if (SUITE[file]!.platform !== false) t.match(output, /nakama: using the (fake|real) Nakama/, `${file} ran its platforms on Nakama`)
  }
}
