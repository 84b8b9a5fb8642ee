import { Worker } from 'node:worker_threads'
import type { Test } from 'tap'
import { startFakeNakama, type FakeNakama, type FakeNakamaOptions } from './server.js'
import type { Question } from './worker.js'

/** A Nakama for a test: the real one named by the environment, or a fresh fake. */
export interface TestNakama {
  url: string
  serverKey: string
  httpKey: string
  /** The fake, when one was started (tests that need its switches skip on a real Nakama). */
  fake: FakeNakama | null
}

/** NAKAMA_URL, NAKAMA_SERVER_KEY and NAKAMA_HTTP_KEY, when all three are set. */
export function realNakama(): Omit<TestNakama, 'fake'> | null {
  const { NAKAMA_URL: url, NAKAMA_SERVER_KEY: serverKey, NAKAMA_HTTP_KEY: httpKey } = process.env
  return url && serverKey && httpKey ? { url: url.replace(/\/+$/, ''), serverKey, httpKey } : null
}

let announced = false

/** The real Nakama when configured, else a fake on an ephemeral port; says which on stderr once. */
export async function testNakama(options: FakeNakamaOptions = {}): Promise<TestNakama> {
  const real = realNakama()
  if (real) {
    if (!announced) process.stderr.write(`# nakama: using the real Nakama at ${real.url} (NAKAMA_URL)\n`)
    announced = true
    return { ...real, fake: null }
  }
  const fake = await startFakeNakama(options)
  if (!announced) process.stderr.write(`# nakama: using the fake Nakama (test/fake-nakama) at ${fake.url}; set NAKAMA_URL, NAKAMA_SERVER_KEY and NAKAMA_HTTP_KEY for a real one\n`)
  announced = true
  return { url: fake.url, serverKey: fake.serverKey, httpKey: fake.httpKey, fake }
}

/** The platform's environment for this Nakama. */
export function nakamaEnv(n: Pick<TestNakama, 'url' | 'serverKey' | 'httpKey'>): Record<string, string> {
  return { GAME_BACKEND: 'nakama', NAKAMA_URL: n.url, NAKAMA_SERVER_KEY: n.serverKey, NAKAMA_HTTP_KEY: n.httpKey }
}

/** The worker-thread fake serving each DATA_DIR under TEST_BACKEND=nakama. */
const workers = new Map<string, Worker>()

/**
 * The Nakama for platforms that test/helpers/platform.ts starts under TEST_BACKEND=nakama: the real
 * one when NAKAMA_URL is set, else a fake of this DATA_DIR on a worker thread (so a test that blocks
 * its event loop, e.g. with execFileSync, cannot starve it). Says which on stderr once.
 */
export async function nakamaForDataDir(dataDir: string): Promise<Record<string, string>> {
  const real = realNakama()
  if (real) return nakamaEnv((await testNakama()))
  const worker = new Worker(new URL('./worker.js', import.meta.url))
  worker.unref()
  const ready = await new Promise<{ url: string; serverKey: string; httpKey: string }>((resolve, reject) => {
    worker.once('message', resolve)
    worker.once('error', reject)
  })
  workers.set(dataDir, worker)
  if (!announced) process.stderr.write(`# nakama: using the fake Nakama (test/fake-nakama) at ${ready.url}; set NAKAMA_URL, NAKAMA_SERVER_KEY and NAKAMA_HTTP_KEY for a real one\n`)
  announced = true
  return nakamaEnv(ready)
}

/** Ask the worker fake of `dataDir` a question and wait for the answer (at most 10 s). */
function ask(dataDir: string, question: Question): number {
  const worker = workers.get(dataDir)
  if (!worker) throw new Error(`no fake Nakama for ${dataDir} (a real Nakama cannot be inspected)`)
  const shared = new SharedArrayBuffer(8)
  const view = new Int32Array(shared)
  worker.postMessage({ question, shared })
  if (Atomics.wait(view, 0, 0, 10_000) === 'timed-out') throw new Error('the fake Nakama did not answer')
  return view[1]!
}

/**
 * The questions API tests ask of the embedded backend's SQLite file, answered from the fake Nakama
 * of that DATA_DIR, so the same "nothing was written" checks hold on both backends. Unknown
 * questions throw: a test that needs another one must say how Nakama answers it.
 */
export function countInNakama(dataDir: string, sql: string, ...params: unknown[]): number {
  const query = sql.replace(/\s+/g, ' ').trim()
  if (query === 'SELECT count(*) FROM accounts') return ask(dataDir, { kind: 'accounts' })
  if (query === "SELECT count(*) FROM buckets WHERE key = 'rename:' || ?") return ask(dataDir, { kind: 'rename-bucket', userId: String(params[0]) })
  throw new Error(`countInNakama: no Nakama equivalent for ${query}`)
}

/**
 * Until `restore` is called (and at the latest when `t` ends), every write of the module to its
 * buckets or roles fails its version check, as under contention past the module's retries.
 */
export function contendStorage(t: Test, fake: FakeNakama): { restore(): void } {
  const nk = fake.runtime.nk
  const write = nk.storageWrite
  const restore = (): void => void (nk.storageWrite = write)
  t.teardown(restore)
  nk.storageWrite = (writes) => {
    if (writes.some((w) => w.collection === 'playfield_rename_buckets' || w.collection === 'playfield_roles')) throw new Error('Storage write rejected - version check failed.')
    return write(writes)
  }
  return { restore }
}
