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
