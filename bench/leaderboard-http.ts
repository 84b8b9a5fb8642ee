// The HTTP half of bench:leaderboard: the real platform (embedded backend) under wrk.
import { spawn, execFileSync } from 'node:child_process'
import { openSync, readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { PLATFORM_JS, ROOT, tempDir } from '../test/helpers/platform.js'

const USERS = 1000
const CONNECTIONS = 50
const SECONDS = 10
/** A `set` board of the real catalogue: every submission with a new score is a committed write. */
const BOARD = 'neon-last-run'

export interface HttpFigures {
  requests: number
  requestsPerSecond: number
  p99Ms: number
  non2xx: number
}

/** Start the platform, sign in USERS guests, and run wrk against POST /api/leaderboards/submit. */
export async function benchHttp(): Promise<HttpFigures> {
  const dir = tempDir('playfield-bench-http-')
  const logFile = path.join(dir, 'platform.log')
  // stdout to a file, as journald would take it, so reading the access log costs this process nothing.
  const child = spawn(process.execPath, [PLATFORM_JS], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, PORT: '0', DATA_DIR: path.join(dir, 'data'), MANIFESTS_DIR: path.join(ROOT, 'manifests') },
    stdio: ['ignore', openSync(logFile, 'w'), 'inherit'],
  })
  try {
    const port = await listeningPort(logFile)
    const base = `http://127.0.0.1:${port}`
    const cookies: string[] = []
    for (let i = 0; i < USERS; i++) {
      const res = await fetch(`${base}/api/auth/guest`, { method: 'POST' })
      if (res.status !== 200) throw new Error(`guest sign-in answered ${res.status}`)
      cookies.push(res.headers.getSetCookie()[0]!.split(';')[0]!)
    }
    const script = path.join(dir, 'submit.lua')
    writeFileSync(script, wrkScript(cookies))
    const out = execFileSync('wrk', ['-t2', `-c${CONNECTIONS}`, `-d${SECONDS}s`, '-s', script, base], { encoding: 'utf8' })
    const line = out.split('\n').find((l) => l.startsWith('WRKJSON '))
    if (!line) throw new Error(`wrk printed no summary:\n${out}`)
    const r = JSON.parse(line.slice('WRKJSON '.length)) as { requests: number; duration_us: number; non2xx: number; p99_us: number }
    // Only answered submissions count toward the rate: a 4xx/5xx would flatter it.
    return { requests: r.requests, requestsPerSecond: (r.requests - r.non2xx) / (r.duration_us / 1e6), p99Ms: r.p99_us / 1000, non2xx: r.non2xx }
  } finally {
    child.kill('SIGTERM')
  }
}

async function listeningPort(logFile: string): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const match = /"event":"platform.listening"[^\n]*"port":(\d+)/.exec(readFileSync(logFile, 'utf8'))
    if (match) return Number(match[1])
    await sleep(50)
  }
  throw new Error('the platform did not start')
}

/** Each request signs in as the next user (round robin, threads offset) and sends a random score. */
function wrkScript(cookies: string[]): string {
  return `
local cookies = { ${cookies.map((c) => JSON.stringify(c)).join(',\n')} }
local next_id = 0
local counter = 0
function setup(thread)
  thread:set("offset", next_id * 7919)
  next_id = next_id + 1
end
function init(args)
  counter = offset or 0
  math.randomseed(counter + 1)
end
function request()
  counter = counter + 1
  local body = '{"leaderboardId":"${BOARD}","score":' .. math.random(0, 1000000) .. ',"subscore":' .. math.random(0, 99) .. '}'
  return wrk.format("POST", "/api/leaderboards/submit", { ["Content-Type"] = "application/json", ["Cookie"] = cookies[(counter % #cookies) + 1] }, body)
end
function done(summary, latency, requests)
  io.write(string.format('WRKJSON {"requests":%d,"duration_us":%d,"non2xx":%d,"p99_us":%d}\\n',
    summary.requests, summary.duration, summary.errors.status, latency:percentile(99)))
end
`
}
