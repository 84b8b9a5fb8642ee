import path from 'node:path'
import t from 'tap'
import { Client, ROOT, startPlatform, tempDir } from './helpers/platform.js'

const MANIFESTS_DIR = path.join(ROOT, 'test/fixtures/leaderboards')
const BOARD = 'fx-best-desc'

t.test('every acknowledged submission survives SIGKILL mid-stream, with its rank', async (t) => {
  const dataDir = tempDir()
  const first = await startPlatform({ dataDir, env: { MANIFESTS_DIR } })
  const users = await Promise.all(
    Array.from({ length: 6 }, async () => {
      const client = new Client(first.url)
      const { user } = (await (await client.post('/api/auth/guest')).json()) as { user: { id: string } }
      return { client, id: user.id, acked: -1, sent: -1 }
    }),
  )
  let killed = false
  // Each user submits rising scores back to back (staying under the flood limit) until the kill.
  const streams = users.map(async (u, n) => {
    for (let score = n; !killed; score += users.length) {
      u.sent = score
      try {
        const res = await u.client.post('/api/leaderboards/submit', { leaderboardId: BOARD, score })
        if (res.status === 200) {
          const body = (await res.json()) as { record: { score: number } }
          if (!killed) u.acked = Math.max(u.acked, body.record.score)
        }
      } catch {
        return // the connection died with the process
      }
      await new Promise((resolve) => setTimeout(resolve, 60))
    }
  })
  // Let every user get a few acknowledgements (however slow the machine), then a little more.
  for (let waited = 0; users.some((u) => u.acked < 3 * users.length) && waited < 30_000; waited += 50) {
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  await new Promise((resolve) => setTimeout(resolve, 300))
  // Kill while requests are in flight: no graceful close, no final commit.
  first.child.kill('SIGKILL')
  killed = true
  await first.exited
  await Promise.all(streams)
  t.ok(users.every((u) => u.acked >= 0), 'every user had acknowledged submissions before the kill')

  const second = await startPlatform({ dataDir, env: { MANIFESTS_DIR } })
  t.teardown(() => second.stop())
  const reader = new Client(second.url)
  const page = (await (await reader.get(`/api/leaderboards/${BOARD}?limit=100`)).json()) as {
    records: { owner_id: string; score: number; rank: number }[]
  }
  t.equal(page.records.length, users.length, 'one record per user')
  t.same(page.records.map((r) => r.rank), users.map((_, i) => i + 1), 'ranks 1..n')
  t.same([...page.records].sort((a, b) => b.score - a.score), page.records, 'in score order')
  for (const u of users) {
    const record = page.records.find((r) => r.owner_id === u.id)
    t.ok(record && record.score >= u.acked && record.score <= u.sent, `user ${u.id}: stored ${record?.score}, acknowledged ${u.acked}, sent ${u.sent}`)
    // The session cookie survives the restart too: the user sees its own rank.
    const own = (await (await new Client(second.url).request('GET', `/api/leaderboards/${BOARD}`, undefined, {
      cookie: [...u.client.cookies].map(([k, v]) => `${k}=${v}`).join('; '),
    })).json()) as { ownRecord: { rank: number; score: number } | null }
    t.same(own.ownRecord && [own.ownRecord.score, own.ownRecord.rank], record && [record.score, record.rank], 'ownRecord after restart')
  }
})
