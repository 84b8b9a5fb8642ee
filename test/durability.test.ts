import { spawnSync } from 'node:child_process'
import { setTimeout as sleep } from 'node:timers/promises'
import { closeSync, openSync, unlinkSync, writeSync } from 'node:fs'
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
      await sleep(60)
    }
  })
  // Let every user get a few acknowledgements (however slow the machine), then a little more.
  for (let waited = 0; users.some((u) => u.acked < 3 * users.length) && waited < 30_000; waited += 50) {
    await sleep(50)
  }
  await sleep(300)
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

/** A 2 MiB tmpfs for DATA_DIR, so the disk can fill; null where this process may not mount one. */
function smallDisk(): string | null {
  if (process.getuid?.() !== 0) return null
  const dir = tempDir()
  const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=2m,mode=0700', 'tmpfs', dir])
  return mounted.status === 0 ? dir : null
}

/** Write a file until the disk is full; returns its path. */
function fillDisk(dir: string): string {
  const file = path.join(dir, 'filler')
  const fd = openSync(file, 'w')
  const chunk = Buffer.alloc(16 * 1024)
  try {
    for (;;) writeSync(fd, chunk)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err
  } finally {
    closeSync(fd)
  }
  return file
}

const disk = smallDisk()

t.test('a full disk: no write is confirmed unless stored, no name changes unless stored, a restart still starts, and all recovers once there is room', { skip: disk ? false : 'needs root and a tmpfs mount' }, async (t) => {
  const dataDir = disk!
  t.teardown(() => void spawnSync('umount', ['-l', dataDir]))
  const platform = await startPlatform({ dataDir, env: { MANIFESTS_DIR } })
  let current = platform
  t.teardown(() => current.stop())
  const player = async () => {
    const client = new Client(current.url)
    const { user } = (await (await client.post('/api/auth/guest')).json()) as { user: { id: string; username: string } }
    return { client, ...user }
  }
  const ranked = await player()
  t.equal((await ranked.client.post('/api/leaderboards/submit', { leaderboardId: BOARD, score: 7 })).status, 200)
  const fresh = await player()
  const filler = fillDisk(dataDir)

  // Two writes of a player with no record yet, in one commit: the second was an UPDATE of a row
  // the refused INSERT never made, and was confirmed.
  const writes = await Promise.all([10, 20].map((score) => fresh.client.post('/api/leaderboards/submit', { leaderboardId: BOARD, score })))
  t.same(writes.map((r) => r.status), [500, 500], 'both refused')
  const rename = await ranked.client.put('/api/user/username', { username: 'renamed-on-full-disk' })
  t.equal(rename.status, 500, 'the rename is refused')
  const board = async () => ((await (await new Client(current.url).get(`/api/leaderboards/${BOARD}?limit=100`)).json()) as { records: { owner_id: string; username: string; score: number }[] }).records
  t.same((await board()).filter((r) => r.owner_id === fresh.id), [], 'no record served for the refused writes')
  t.match((await board()).find((r) => r.owner_id === ranked.id), { username: ranked.username, score: 7 }, 'the name served is the stored one')

  // A restart while the disk is still full starts and serves what is stored.
  await current.stop()
  current = await startPlatform({ dataDir, env: { MANIFESTS_DIR } })
  t.match((await board()).find((r) => r.owner_id === ranked.id), { username: ranked.username, score: 7 }, 'served after a restart on a full disk')

  unlinkSync(filler)
  const again = await player()
  t.equal((await again.client.post('/api/leaderboards/submit', { leaderboardId: BOARD, score: 30 })).status, 200, 'writes work again once there is room, without a restart')
})
