import { parentPort } from 'node:worker_threads'
import { startFakeNakama } from './server.js'
import { SYSTEM_USER } from './state.js'

// A fake Nakama on its own thread, for platforms started by other tests under TEST_BACKEND=nakama:
// a test that blocks its own event loop (execFileSync of `bin/platform users …`) still gets answers.
// It answers the questions of countInNakama synchronously through a shared buffer.

/** A question about the fake's state (see countInNakama in env.ts). */
export type Question = { kind: 'accounts' } | { kind: 'rename-bucket'; userId: string }

const fake = await startFakeNakama()
parentPort!.postMessage({ url: fake.url, serverKey: fake.serverKey, httpKey: fake.httpKey })
parentPort!.on('message', ({ question, shared }: { question: Question; shared: SharedArrayBuffer }) => {
  const view = new Int32Array(shared)
  view[1] = question.kind === 'accounts' ? fake.state.users.size : fake.state.read('playfield_rename_buckets', question.userId, SYSTEM_USER) ? 1 : 0
  Atomics.store(view, 0, 1)
  Atomics.notify(view, 0)
})
