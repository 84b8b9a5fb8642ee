import t from 'tap'
import { applyOperator, compareRank, nextExpiry, type Operator, type Scores, type SortOrder } from '../lib/leaderboard.js'

const s = (score: number, subscore = 0): Scores => ({ score, subscore })

// [operator, sort order, stored (undefined: no record yet), written, stored after (null: nothing changes)]
type Case = [Operator, SortOrder, Scores | undefined, Scores, Scores | null]
const CASES: Case[] = []
for (const op of ['best', 'set', 'incr'] as const) {
  for (const order of ['desc', 'asc'] as const) {
    CASES.push([op, order, undefined, s(100, 5), s(100, 5)], [op, order, undefined, s(0), s(0)])
  }
}
CASES.push(
  // best, descending: max of each, independently (100/5 then 90/9 stores 100/9, Nakama's quirk)
  ['best', 'desc', s(100, 5), s(90, 9), s(100, 9)],
  ['best', 'desc', s(100, 5), s(110, 1), s(110, 5)],
  ['best', 'desc', s(100, 5), s(110, 9), s(110, 9)],
  ['best', 'desc', s(100, 5), s(100, 5), null],
  ['best', 'desc', s(100, 5), s(90, 4), null],
  ['best', 'desc', s(100, 5), s(100, 4), null],
  ['best', 'desc', s(100), s(120), s(120)],
  ['best', 'desc', s(100), s(80), null],
  ['best', 'desc', s(100), s(100), null],
  // best, ascending: min of each, independently
  ['best', 'asc', s(100, 5), s(90, 9), s(90, 5)],
  ['best', 'asc', s(100, 5), s(110, 1), s(100, 1)],
  ['best', 'asc', s(100, 5), s(90, 1), s(90, 1)],
  ['best', 'asc', s(100, 5), s(100, 5), null],
  ['best', 'asc', s(100, 5), s(110, 6), null],
  ['best', 'asc', s(100), s(80), s(80)],
  ['best', 'asc', s(100), s(120), null],
  ['best', 'asc', s(100), s(100), null],
)
for (const order of ['desc', 'asc'] as const) {
  CASES.push(
    // set: replaces both; an identical write changes nothing
    ['set', order, s(100, 5), s(90, 9), s(90, 9)],
    ['set', order, s(100, 5), s(110, 1), s(110, 1)],
    ['set', order, s(100, 5), s(100, 6), s(100, 6)],
    ['set', order, s(100, 5), s(100, 5), null],
    ['set', order, s(100), s(50), s(50)],
    ['set', order, s(100), s(0), s(0)],
    ['set', order, s(100), s(100), null],
    // incr: adds both, whatever the order; zero deltas change nothing
    ['incr', order, s(100, 5), s(10, 1), s(110, 6)],
    ['incr', order, s(100, 5), s(0, 3), s(100, 8)],
    ['incr', order, s(100, 5), s(0, 0), null],
    ['incr', order, s(100), s(7), s(107)],
    ['incr', order, s(100), s(0), null],
  )
}

t.test('applyOperator follows Nakama for every operator, sort order and subscore case', async (t) => {
  for (const [op, order, old, write, want] of CASES) {
    const name = `${op}/${order}: ${old ? `${old.score}/${old.subscore}` : 'none'} + ${write.score}/${write.subscore}`
    t.same(applyOperator(old, write, op, order), want, name)
  }
  const ops = new Set(CASES.map(([op, order, old, w]) => `${op}-${order}-${old ? 'old' : 'new'}-${w.subscore ? 'sub' : 'nosub'}`))
  t.equal(ops.size, 3 * 2 * 2 * 2, 'every operator x order x existing x subscore combination is covered')
})

t.test('applyOperator never mutates its inputs', async (t) => {
  const old = s(1, 1)
  const write = s(2, 2)
  const out = applyOperator(old, write, 'set', 'desc')
  t.not(out, write)
  t.same(old, s(1, 1))
})

t.test('compareRank orders by score, then subscore, then owner id, all in the sort direction', async (t) => {
  const keys = [
    { score: 10, subscore: 1, ownerId: 'b' },
    { score: 10, subscore: 1, ownerId: 'a' },
    { score: 10, subscore: 2, ownerId: 'a' },
    { score: 20, subscore: 0, ownerId: 'a' },
    { score: 5, subscore: 9, ownerId: 'z' },
  ]
  const ids = (order: SortOrder) =>
    [...keys].sort((a, b) => compareRank(a, b, order)).map((k) => `${k.score}/${k.subscore}/${k.ownerId}`)
  t.same(ids('desc'), ['20/0/a', '10/2/a', '10/1/b', '10/1/a', '5/9/z'])
  t.same(ids('asc'), ['5/9/z', '10/1/a', '10/1/b', '10/2/a', '20/0/a'])
  t.equal(compareRank(keys[0]!, { ...keys[0]! }, 'desc'), 0)
})

t.test('nextExpiry is the next UTC fire time after now, 0 without a schedule', async (t) => {
  const at = (iso: string) => Date.parse(iso)
  t.equal(nextExpiry(null, at('2026-11-21T06:00:00Z')), 0)
  t.equal(nextExpiry('0 0 * * 1', at('2026-11-21T06:00:00Z')), at('2026-11-23T00:00:00Z'), 'weekly on Monday')
  t.equal(nextExpiry('0 0 * * *', at('2026-11-21T23:59:59.999Z')), at('2026-11-22T00:00:00Z'), 'daily')
  t.equal(nextExpiry('0 0 * * *', at('2026-11-22T00:00:00Z')), at('2026-11-23T00:00:00Z'), 'at the fire time itself, the next one')
  t.equal(nextExpiry('0 0 1 * *', at('2026-12-15T12:00:00Z')), at('2027-01-01T00:00:00Z'), 'monthly across the year')
})
