/**
 * npm run bench:catalogue — GET /api/games on the platform against the practical limit: a minimal
 * node:http server writing the same pre-serialized bytes, measured interleaved in one run with wrk
 * (50 connections), identity and gzip, several rounds; prints medians and the ratio ours/limit
 * (target >= 0.90). With two cores, a same-core check follows: both servers loaded at once on one
 * core, whose requests ratio is their CPU cost ratio. Then start-up to first answer with 1,000
 * generated manifests (target <= 1 s). Loopback figures swing from run to run; only the ratios mean anything.
 */
import { spawn, execFile, type ChildProcess } from 'node:child_process'
import { mkdtempSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { freePort, PLATFORM_JS, ROOT } from '../test/helpers/platform.js'
import { promisify } from 'node:util'

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5)
const CONNECTIONS = 50
const GENERATED = 1000
const run = promisify(execFile)
const tmp = mkdtempSync(path.join(os.tmpdir(), 'playfield-bench-'))
const children: ChildProcess[] = []
process.once('exit', () => {
  for (const child of children) child.kill('SIGKILL')
  rmSync(tmp, { recursive: true, force: true })
})

/** GET returning the raw bytes (no decompression). */
function getRaw(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    http.get(url, { headers }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c)).on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }))
    }).on('error', reject)
  })
}

/** Poll until the URL answers 200; resolves with the time it took from `since`. */
async function firstAnswer(url: string, since: number, child: ChildProcess): Promise<number> {
  for (;;) {
    if (child.exitCode !== null) throw new Error(`process exited ${child.exitCode} before answering`)
    const answered = await getRaw(url).then((r) => r.status === 200, () => false)
    if (answered) return performance.now() - since
    await new Promise((r) => setTimeout(r, 5))
  }
}

/**
 * With two cores or more, each server runs on core 0 and wrk on core 1 (taskset): left to the
 * scheduler, the two processes and the loopback's softirq work trade places from run to run, and
 * the same server's rate swung by 2x between 2-second loads. Both servers get the same treatment.
 */
const PIN = os.availableParallelism() >= 2 && (await run('taskset', ['-c', '0', 'true']).then(() => true, () => false))

function pinned(core: number, command: string, args: string[]): [string, string[]] {
  return PIN ? ['taskset', ['-c', String(core), command, ...args]] : [command, args]
}

/** Start the platform with stdout (the access log) to /dev/null, as a journal would take it away. */
async function startPlatform(manifestsDir: string, pin = false): Promise<{ child: ChildProcess; url: string; ms: number; cpu: number }> {
  const port = await freePort()
  const dataDir = mkdtempSync(path.join(tmp, 'data-'))
  const started = performance.now()
  const [command, args] = pin ? pinned(0, process.execPath, [PLATFORM_JS]) : [process.execPath, [PLATFORM_JS]]
  const child = spawn(command, args, {
    cwd: ROOT,
    env: { PATH: process.env.PATH, PORT: String(port), DATA_DIR: dataDir, MANIFESTS_DIR: manifestsDir },
    stdio: ['ignore', openSync('/dev/null', 'w'), 'inherit'],
  })
  children.push(child)
  const url = `http://127.0.0.1:${port}/api/games`
  const ms = await firstAnswer(url, started, child)
  return { child, url, ms, cpu: cpuMs(child.pid!) }
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return
  const exited = new Promise((r) => child.once('exit', r))
  child.kill('SIGTERM')
  await exited
}

interface Sample {
  rps: number
  p99ms: number
  /** Server CPU (user + system) per answered request, in microseconds: steadier than req/s on a busy machine. */
  cpuUs: number
}

/** CPU time a process has used, in ms (Linux /proc; clock ticks of 10 ms). */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
  return (Number(fields[11]) + Number(fields[12])) * 10
}

/** One wrk load; parses Requests/sec and the 99% latency of --latency. */
async function wrk(url: string, gzip: boolean, pid: number): Promise<Sample> {
  const cpuBefore = cpuMs(pid)
  const args = ['-t1', `-c${CONNECTIONS}`, `-d${SECONDS}s`, '--latency', ...(gzip ? ['-H', 'Accept-Encoding: gzip'] : []), url]
  const { stdout } = await run(...pinned(1, 'wrk', args))
  const cpu = cpuMs(pid) - cpuBefore
  const requests = Number(/(\d+) requests in/.exec(stdout)?.[1])
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(stdout)?.[1])
  const [, value, unit] = /99%\s+([\d.]+)(us|ms|s)/.exec(stdout) ?? []
  const p99ms = Number(value) * (unit === 'us' ? 0.001 : unit === 's' ? 1000 : 1)
  if (!(rps > 0) || /Non-2xx|Socket errors/.test(stdout)) throw new Error(`wrk output not understood:\n${stdout}`)
  return { rps, p99ms, cpuUs: (cpu * 1000) / requests }
}

const SHARED_SECONDS = 5
const SHARED_ROUNDS = 3

/**
 * Both servers loaded at once on the one core they are pinned to, each by its own wrk on core 1.
 * The scheduler splits the core between them evenly, so the ratio of requests each answered is
 * the inverse ratio of their CPU cost per request, measured in the same seconds: a neighbour's
 * load or a slower host slows both alike, which interleaved loads cannot promise.
 */
async function sharedCore(oursUrl: string, limitUrl: string): Promise<number[]> {
  const load = (url: string): Promise<number> =>
    run(...pinned(1, 'wrk', ['-t1', `-c${CONNECTIONS}`, `-d${SHARED_SECONDS}s`, url])).then(({ stdout }) => Number(/(\d+) requests in/.exec(stdout)?.[1]))
  const ratios: number[] = []
  for (let round = 0; round < SHARED_ROUNDS; round++) {
    const [o, l] = await Promise.all([load(oursUrl), load(limitUrl)])
    if (!(o > 0 && l > 0)) throw new Error('a same-core load gave no answers')
    ratios.push(o / l)
  }
  return ratios
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b)
  const mid = Math.floor(s.length / 2)
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2
}

/** 1,000 valid manifests, each with its own two leaderboards, from one repository manifest. */
function generateManifests(): string {
  const dir = path.join(tmp, 'manifests')
  mkdirSync(dir)
  const template = JSON.parse(readFileSync(path.join(ROOT, 'manifests/lantern-drift.json'), 'utf8'))
  for (let i = 0; i < GENERATED; i++) {
    const id = `generated-${i}`
    const ids = [`${id}-lap`, `${id}-score`]
    const [lap, score] = Object.values(template.leaderboards.configs)
    const game = { ...template, id, title: `Generated game ${i}`, playUrl: `/games/${id}/index.html?embed=1`, leaderboards: { default: ids[0], ids, configs: { [ids[0]!]: lap, [ids[1]!]: score } } }
    writeFileSync(path.join(dir, `${id}.json`), JSON.stringify(game, null, 2))
  }
  return dir
}

async function main(): Promise<void> {
  const ours = await startPlatform(path.join(ROOT, 'manifests'), true)
  const identity = await getRaw(ours.url)
  const gzip = await getRaw(ours.url, { 'accept-encoding': 'gzip' })
  writeFileSync(path.join(tmp, 'identity'), identity.body)
  writeFileSync(path.join(tmp, 'gzip'), gzip.body)
  const limitPort = await freePort()
  const limit = spawn(...pinned(0, process.execPath, [fileURLToPath(import.meta.url), '--limit', path.join(tmp, 'identity'), path.join(tmp, 'gzip'), String(limitPort)]), { stdio: 'inherit' })
  children.push(limit)
  const limitUrl = `http://127.0.0.1:${limitPort}/api/games`
  await firstAnswer(limitUrl, performance.now(), limit)
  console.log(`GET /api/games: ${identity.body.length} B identity, ${gzip.body.length} B gzip; wrk -t1 -c${CONNECTIONS}, ${SECONDS} s loads, ${ROUNDS} rounds${PIN ? '; servers on core 0, wrk on core 1' : ''}`)

  const samples: Record<string, Sample[]> = {}
  for (let round = 0; round < ROUNDS; round++) {
    for (const encoding of ['identity', 'gzip']) {
      // Alternate which server goes first, so neither always gets the warmer machine.
      const order = round % 2 === 0 ? ['ours', 'limit'] : ['limit', 'ours']
      for (const who of order) {
        const sample = await wrk(who === 'ours' ? ours.url : limitUrl, encoding === 'gzip', who === 'ours' ? ours.child.pid! : limit.pid!)
        ;(samples[`${who} ${encoding}`] ??= []).push(sample)
        console.log(`  round ${round + 1} ${who.padEnd(5)} ${encoding.padEnd(8)} ${sample.rps.toFixed(0).padStart(7)} req/s  p99 ${sample.p99ms.toFixed(2)} ms  cpu ${sample.cpuUs.toFixed(1)} us/req`)
      }
    }
  }
  const shared = PIN ? await sharedCore(ours.url, limitUrl) : []
  await stop(ours.child)
  await stop(limit)

  console.log('\nmedians            req/s     p99 ms   cpu us/req   req/s ratio ours/limit (target >= 0.90)   cpu ratio limit/ours   per-round ratios')
  for (const encoding of ['identity', 'gzip']) {
    const o = samples[`ours ${encoding}`]!
    const l = samples[`limit ${encoding}`]!
    const [orps, lrps] = [median(o.map((s) => s.rps)), median(l.map((s) => s.rps))]
    const [ocpu, lcpu] = [median(o.map((s) => s.cpuUs)), median(l.map((s) => s.cpuUs))]
    console.log(`  ours  ${encoding.padEnd(8)} ${orps.toFixed(0).padStart(7)}   ${median(o.map((s) => s.p99ms)).toFixed(2).padStart(6)}   ${ocpu.toFixed(1).padStart(8)}`)
    // Each round's two loads ran back to back: their ratio is what the machine's drift moves least.
    const rounds = o.map((s, i) => s.rps / l[i]!.rps)
    console.log(`  limit ${encoding.padEnd(8)} ${lrps.toFixed(0).padStart(7)}   ${median(l.map((s) => s.p99ms)).toFixed(2).padStart(6)}   ${lcpu.toFixed(1).padStart(8)}   ${(orps / lrps).toFixed(3).padStart(8)}   ${(lcpu / ocpu).toFixed(3).padStart(28)}   ${rounds.map((r) => r.toFixed(2)).join(' ')} (median ${median(rounds).toFixed(3)})`)
  }

  if (shared.length) {
    console.log(`\nsame core, same time (both servers on core 0 at once, one wrk each on core 1, ${SHARED_SECONDS} s, ${shared.length} rounds, identity):`)
    console.log(`  requests answered ours/limit ${shared.map((r) => r.toFixed(3)).join(' ')} (median ${median(shared).toFixed(3)}): the scheduler gives both the same CPU, so this is the limit's CPU per request over ours, with the machine's drift hitting both alike`)
  }

  // Wall time swings with the machine's load; the process's own CPU time to its first answer does
  // not, and the start with the 13 repository manifests shows what is not the catalogue's.
  const dir = generateManifests()
  console.log('')
  for (const [label, manifests] of [[`${GENERATED} generated manifests`, dir], ['the repository manifests', path.join(ROOT, 'manifests')]] as const) {
    const starts: { ms: number; cpu: number }[] = []
    for (let i = 0; i < 3; i++) {
      const started = await startPlatform(manifests)
      starts.push({ ms: started.ms, cpu: started.cpu })
      await stop(started.child)
    }
    const wall = median(starts.map((s) => s.ms))
    const cpu = median(starts.map((s) => s.cpu))
    console.log(`start-up to first answer with ${label}: median ${wall.toFixed(0)} ms wall (${starts.map((s) => s.ms.toFixed(0)).join(', ')}), ${cpu.toFixed(0)} ms CPU (target <= 1000 ms)`)
  }
  console.log(`load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`)
}

// Run as `catalogue.js --limit <identity file> <gzip file> <port>`: the limit server itself.
if (process.argv[2] === '--limit') {
  const [identity, gzip] = [readFileSync(process.argv[3]!), readFileSync(process.argv[4]!)]
  http
    .createServer((req, res) => {
      const gz = /gzip/.test(req.headers['accept-encoding'] ?? '')
      const body = gz ? gzip : identity
      const headers: Record<string, string | number> = { 'content-type': 'application/json; charset=utf-8', 'content-length': body.length }
      if (gz) headers['content-encoding'] = 'gzip'
      res.writeHead(200, headers).end(body)
    })
    .listen(Number(process.argv[5]), '127.0.0.1')
} else {
  await main()
}
