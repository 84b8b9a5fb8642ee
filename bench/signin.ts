/**
 * npm run bench:signin — how long a password sign-in takes, and whether the platform stays
 * responsive while 20 run at once. Against the platform (embedded backend, real SQLite) it
 * measures: the median POST /api/auth/login, next to the bare cost of one scrypt with the same
 * parameters measured in this process (the limit: a sign-in cannot be cheaper); the median of a
 * wrong password next to an unknown name (timing must not tell them apart, ratio near 1); and,
 * during 20 parallel sign-ins, the latency of a cheap request sent every 5 ms. Had the hashes run
 * on the event loop, they would run one after another and a probe would wait for every hash queued
 * before it, most of the burst; so the target is max probe latency / burst time < 0.25. The probe
 * is also shown against one scrypt: on an idle machine it stays below it; on a loaded 2-core box
 * the 4 hashing threads take CPU from the event loop's thread and stretch every probe a little.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes, scrypt } from 'node:crypto'
import { mkdtempSync, openSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { COST } from '../lib/backend/embedded/passwords.js'
import { freePort, PLATFORM_JS, ROOT } from '../test/helpers/platform.js'

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 30)
const PARALLEL = 20
const tmp = mkdtempSync(path.join(os.tmpdir(), 'playfield-bench-'))
let child: ChildProcess | undefined
process.once('exit', () => {
  child?.kill('SIGKILL')
  rmSync(tmp, { recursive: true, force: true })
})

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const fmt = (ms: number): string => `${ms.toFixed(1)} ms`

async function timed(run: () => Promise<Response>, expect: number): Promise<number> {
  const started = performance.now()
  const res = await run()
  await res.arrayBuffer()
  if (res.status !== expect) throw new Error(`expected ${expect}, got ${res.status}`)
  return performance.now() - started
}

function scryptOnce(): Promise<number> {
  const started = performance.now()
  return new Promise((resolve, reject) =>
    scrypt('correct horse', randomBytes(16), 32, { ...COST, maxmem: 64 << 20 }, (err) =>
      err ? reject(err) : resolve(performance.now() - started),
    ),
  )
}

async function main(): Promise<void> {
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  child = spawn(process.execPath, [PLATFORM_JS], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, PORT: String(port), DATA_DIR: path.join(tmp, 'data'), MANIFESTS_DIR: path.join(ROOT, 'manifests') },
    stdio: ['ignore', openSync('/dev/null', 'w'), 'inherit'],
  })
  for (;;) {
    const up = await fetch(`${base}/api/auth/session`).then((r) => r.status === 401, () => false)
    if (up) break
    await new Promise((r) => setTimeout(r, 20))
  }
  let address = 0
  // Each call from its own address (loopback is a trusted proxy), so wrong passwords never reach the sign-in limit.
  const post = (p: string, body: unknown): Promise<Response> =>
    fetch(base + p, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': `10.9.${(address >> 8) & 255}.${address++ & 255}` },
      body: JSON.stringify(body),
    })
  const login = (password: string, username = 'benchuser'): Promise<Response> => post('/api/auth/login', { username, password })
  await timed(() => post('/api/auth/register', { username: 'benchuser', password: 'correct horse' }), 200)

  const bare: number[] = []
  const ok: number[] = []
  const wrong: number[] = []
  const unknown: number[] = []
  for (let i = 0; i < ROUNDS; i++) {
    bare.push(await scryptOnce())
    ok.push(await timed(() => login('correct horse'), 200))
    wrong.push(await timed(() => login('wrong horse'), 401))
    unknown.push(await timed(() => login('correct horse', `nobody${i}`), 401))
  }
  const scryptMs = median(bare)
  console.log(`one scrypt (N=16384, r=8, p=1) in this process: median ${fmt(scryptMs)}  [the limit]`)
  console.log(`POST /api/auth/login, right password:  median ${fmt(median(ok))}  ratio to one scrypt ${(median(ok) / scryptMs).toFixed(2)}`)
  console.log(`wrong password ${fmt(median(wrong))} vs unknown name ${fmt(median(unknown))}: ratio ${(median(wrong) / median(unknown)).toFixed(2)} (target near 1)`)

  const probe = async (until: Promise<unknown>): Promise<number[]> => {
    const latencies: number[] = []
    let done = false
    void until.then(() => (done = true))
    while (!done) {
      latencies.push(await timed(() => fetch(`${base}/api/auth/session`), 401))
      await new Promise((r) => setTimeout(r, 5))
    }
    return latencies
  }
  const idle = await probe(new Promise((r) => setTimeout(r, 500)))
  const started = performance.now()
  const burst = Promise.all(Array.from({ length: PARALLEL }, () => timed(() => login('correct horse'), 200)))
  const during = await probe(burst)
  const wall = performance.now() - started
  const each = await burst
  const maxProbe = Math.max(...during)
  console.log(`${PARALLEL} parallel sign-ins: all 200 in ${fmt(wall)}, each median ${fmt(median(each))}`)
  console.log(`probe GET /api/auth/session: idle median ${fmt(median(idle))}; during the burst ${during.length} probes, median ${fmt(median(during))}, max ${fmt(maxProbe)}`)
  console.log(`max probe latency / burst time = ${(maxProbe / wall).toFixed(2)} (target < 0.25: no hash ran on the event loop)`)
  console.log(`max probe latency / one scrypt = ${(maxProbe / scryptMs).toFixed(2)} (below 1 on an idle machine)`)
}

await main()
process.exit(0)
