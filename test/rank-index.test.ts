import t, { type Test } from 'tap'
import { rankComparator, type RankKey, type SortOrder } from '../lib/leaderboard.js'
import { RankIndex } from '../lib/backend/embedded/rank-index.js'

/** The reference: sort every key and count. */
function expected(keys: Map<string, RankKey>, order: SortOrder): RankKey[] {
  return [...keys.values()].sort(rankComparator(order))
}

function checkAll(t: Test, index: RankIndex<RankKey>, model: Map<string, RankKey>, order: SortOrder, label: string): void {
  const sorted = expected(model, order)
  t.equal(index.size, sorted.length, `${label}: size`)
  const ranks = sorted.map((k) => index.rank(k.ownerId))
  t.same(ranks, sorted.map((_, i) => i + 1), `${label}: every rank`)
  const all = index.page(null, sorted.length + 1)
  t.same(all.entries.map((e) => e.key.ownerId), sorted.map((k) => k.ownerId), `${label}: full page in order`)
  t.equal(all.more, false, `${label}: nothing after the last page`)
  t.equal(index.page(null, sorted.length).more, false, `${label}: a page that ends on the last key has nothing after it`)
  if (sorted.length > 0) t.equal(index.page(null, sorted.length - 1).more, true, `${label}: one short of the last key, more`)
  const paged: string[] = []
  let after: RankKey | null = null
  for (;;) {
    const { entries, more }: { entries: { key: RankKey; rank: number }[]; more: boolean } = index.page(after, 97)
    if (entries.some((e, i) => e.rank !== paged.length + i + 1)) t.fail(`${label}: page ranks`)
    paged.push(...entries.map((e) => e.key.ownerId))
    if (!more) break
    after = entries[entries.length - 1]!.key
  }
  t.same(paged, sorted.map((k) => k.ownerId), `${label}: keyset pages of 97 in order`)
}

t.test('random inserts, replacements and removes keep every rank exact (both orders, many ties)', async (t) => {
  for (const order of ['desc', 'asc'] as const) {
    const index = new RankIndex<RankKey>(rankComparator(order))
    const model = new Map<string, RankKey>()
    let seed = 7
    const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2147483648), seed % n)
    for (let step = 0; step < 3000; step++) {
      const ownerId = `u${rnd(300)}`
      if (rnd(10) === 0) {
        t.equal(index.remove(ownerId), model.delete(ownerId))
      } else {
        // scores in a small range: plenty of ties on score and on score+subscore
        const key = { ownerId, score: rnd(20), subscore: rnd(3) }
        model.set(ownerId, key)
        const rank = index.set(key)
        t.equal(rank, expected(model, order).findIndex((k) => k.ownerId === ownerId) + 1)
      }
      if (step % 500 === 499) checkAll(t, index, model, order, `${order} step ${step}`)
    }
    t.equal(index.rank('nobody'), 0, 'an owner without an entry has rank 0')
    t.equal(index.remove('nobody'), false)
  }
})

t.test('build from sorted and unsorted keys gives the same index as inserts', async (t) => {
  for (const order of ['desc', 'asc'] as const) {
    const model = new Map<string, RankKey>()
    for (let i = 0; i < 2000; i++) model.set(`o${i}`, { ownerId: `o${i}`, score: (i * 7919) % 50, subscore: i % 4 })
    const sorted = expected(model, order)
    const fromSorted = RankIndex.build(sorted, rankComparator(order))
    checkAll(t, fromSorted, model, order, `${order} sorted build`)
    const fromShuffled = RankIndex.build([...model.values()], rankComparator(order))
    checkAll(t, fromShuffled, model, order, `${order} unsorted build`)
    // and it keeps working after writes
    fromSorted.set({ ownerId: 'o5', score: 1000, subscore: 0 })
    model.set('o5', { ownerId: 'o5', score: 1000, subscore: 0 })
    fromSorted.remove('o6')
    model.delete('o6')
    checkAll(t, fromSorted, model, order, `${order} after writes`)
  }
  t.throws(() => RankIndex.build([{ ownerId: 'a', score: 1, subscore: 0 }, { ownerId: 'a', score: 2, subscore: 0 }], rankComparator('desc')))
})

t.test('keyset pages cover every entry once, also when other entries change between pages', async (t) => {
  const index = new RankIndex<RankKey>(rankComparator('desc'))
  for (let i = 0; i < 95; i++) index.set({ ownerId: `p${String(i).padStart(3, '0')}`, score: i % 10, subscore: 0 })
  const seen: string[] = []
  let after: RankKey | null = null
  let pages = 0
  for (;;) {
    const { entries, more } = index.page(after, 10)
    pages++
    seen.push(...entries.map((e) => e.key.ownerId))
    t.same(entries.map((e) => e.rank), entries.map((e) => index.rank(e.key.ownerId)), 'page ranks are the index ranks')
    // a newcomer lands far above the cursor: it must not shift what comes next
    index.set({ ownerId: `new${pages}`, score: 100, subscore: 0 })
    if (!more) break
    after = entries[entries.length - 1]!.key
  }
  t.equal(seen.length, 95)
  t.equal(new Set(seen).size, 95, 'no entry twice')
  t.equal(pages, 10)
  t.same(index.page({ ownerId: 'zzz', score: -1, subscore: 0 }, 5), { entries: [], more: false }, 'after the end: empty')
})

t.test('deep trees: thousands of entries split inner nodes, removals empty and collapse them', async (t) => {
  for (const order of ['desc', 'asc'] as const) {
    const model = new Map<string, RankKey>()
    const initial: RankKey[] = []
    for (let i = 0; i < 6000; i++) initial.push({ ownerId: `b${i}`, score: (i * 7919) % 1000, subscore: i % 5 })
    for (const k of initial) model.set(k.ownerId, k)
    const index = RankIndex.build(initial, rankComparator(order))
    let seed = 11
    const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2147483648), seed % n)
    // Grow past several levels with inserts clustered at the top (position 0 changes often) ...
    for (let i = 0; i < 20000; i++) {
      const ownerId = `g${rnd(15000)}`
      const key = { ownerId, score: order === 'desc' ? 1000 + rnd(5000) : rnd(5000), subscore: rnd(3) }
      model.set(ownerId, key)
      index.set(key)
    }
    checkAll(t, index, model, order, `${order} grown`)
    // ... then remove almost everything, in random order.
    const owners = [...model.keys()]
    for (let i = owners.length - 1; i > 0; i--) {
      const j = rnd(i + 1)
      ;[owners[i], owners[j]] = [owners[j]!, owners[i]!]
    }
    for (const [n, ownerId] of owners.entries()) {
      if (n >= owners.length - 50) break
      model.delete(ownerId)
      t.equal(index.remove(ownerId), true)
      if (n % 5000 === 0) checkAll(t, index, model, order, `${order} shrinking ${n}`)
    }
    checkAll(t, index, model, order, `${order} shrunk to 50`)
    for (const ownerId of [...model.keys()]) {
      model.delete(ownerId)
      index.remove(ownerId)
    }
    checkAll(t, index, model, order, `${order} empty`)
    index.set({ ownerId: 'again', score: 1, subscore: 1 })
    t.equal(index.rank('again'), 1, 'usable after emptying')
  }
})
