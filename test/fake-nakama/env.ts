import { startFakeNakama, type FakeNakama, type FakeNakamaOptions } from './server.js'

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

/** The fake serving each DATA_DIR under TEST_BACKEND=nakama (test/helpers/platform.ts fills it). */
const fakes = new Map<string, FakeNakama>()

export function rememberFake(dataDir: string, fake: FakeNakama): void {
  fakes.set(dataDir, fake)
}

/**
 * The questions API tests ask of the embedded backend's SQLite file, answered from the fake Nakama
 * of that DATA_DIR, so the same "nothing was written" checks hold on both backends. Unknown
 * questions throw: a test that needs another one must say how Nakama answers it.
 */
export function countInNakama(dataDir: string, sql: string, ...params: unknown[]): number {
  const fake = fakes.get(dataDir)
  if (!fake) throw new Error(`no fake Nakama for ${dataDir} (a real Nakama cannot be inspected)`)
  const query = sql.replace(/\s+/g, ' ').trim()
  if (query === 'SELECT count(*) FROM accounts') return fake.state.users.size
  if (query === "SELECT count(*) FROM buckets WHERE key = 'rename:' || ?") {
    return fake.state.read('playfield_buckets', 'rename', String(params[0])) ? 1 : 0
  }
  throw new Error(`countInNakama: no Nakama equivalent for ${query}`)
}
