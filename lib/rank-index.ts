import type { RankKey } from './leaderboard.js'

// Redis's zset parameters: a node is promoted with probability 1/4, so 32 levels cover 4^32 entries.
const MAX_LEVEL = 32
const PROMOTE = 0.25

// The rank key is copied into the node so a comparison reads the node it is already at instead of
// following a pointer to the entry: one cache miss less on each of the ~40 steps at 1M entries.
interface SkipNode<K> extends RankKey {
  key: K
  next: (SkipNode<K> | null)[]
  /** How many entries link i skips: the distance in ranks to next[i] (to the end when null). */
  span: number[]
}

/** One entry of a page with its 1-based rank. */
export interface Ranked<K> {
  key: K
  rank: number
}

/**
 * An order-statistic index of one leaderboard period: a skip list with span counts (as Redis's
 * sorted sets), so insert, remove, rank and keyset paging are O(log n), plus one entry per owner.
 */
export class RankIndex<K extends RankKey> {
  readonly #compare: (a: RankKey, b: RankKey) => number
  readonly #head: SkipNode<K>
  readonly #owners = new Map<string, K>()
  #level = 1
  // Scratch arrays reused by every insert and remove, so a write allocates only its node.
  readonly #update: SkipNode<K>[] = []
  readonly #rank: number[] = []

  constructor(compare: (a: RankKey, b: RankKey) => number) {
    this.#compare = compare
    this.#head = newNode(undefined as unknown as K, MAX_LEVEL)
  }

  /** Build from entries in one pass (they are sorted first unless already in rank order). */
  static build<K extends RankKey>(keys: K[], compare: (a: RankKey, b: RankKey) => number): RankIndex<K> {
    const index = new RankIndex<K>(compare)
    let sorted = keys
    for (let i = 1; i < keys.length; i++) {
      if (compare(keys[i - 1]!, keys[i]!) >= 0) {
        sorted = [...keys].sort(compare)
        break
      }
    }
    const last: SkipNode<K>[] = new Array(MAX_LEVEL).fill(index.#head)
    const lastRank: number[] = new Array(MAX_LEVEL).fill(0)
    let rank = 0
    for (const key of sorted) {
      if (index.#owners.has(key.ownerId)) throw new Error(`duplicate owner ${key.ownerId} in rank index`)
      index.#owners.set(key.ownerId, key)
      rank++
      const node = newNode(key, randomLevel())
      for (let i = 0; i < node.next.length; i++) {
        last[i]!.next[i] = node
        last[i]!.span[i] = rank - lastRank[i]!
        last[i] = node
        lastRank[i] = rank
      }
      if (node.next.length > index.#level) index.#level = node.next.length
    }
    for (let i = 0; i < index.#level; i++) last[i]!.span[i] = rank - lastRank[i]!
    return index
  }

  /** Number of ranked entries. */
  get size(): number {
    return this.#owners.size
  }

  /** The owner's entry, if any. */
  get(ownerId: string): K | undefined {
    return this.#owners.get(ownerId)
  }

  /** Put the owner's entry in place of its previous one; returns its new rank. */
  set(key: K): number {
    this.remove(key.ownerId)
    this.#owners.set(key.ownerId, key)
    return this.#insert(key)
  }

  /** Remove the owner's entry; false when it had none. */
  remove(ownerId: string): boolean {
    const key = this.#owners.get(ownerId)
    if (!key) return false
    this.#owners.delete(ownerId)
    const update = this.#update
    let x = this.#head
    for (let i = this.#level - 1; i >= 0; i--) {
      for (let n = x.next[i]; n && this.#compare(n, key) < 0; n = x.next[i]) x = n
      update[i] = x
    }
    const node = x.next[0]!
    for (let i = 0; i < this.#level; i++) {
      const u = update[i]!
      if (u.next[i] === node) {
        u.span[i]! += node.span[i]! - 1
        u.next[i] = node.next[i]!
      } else {
        u.span[i]!--
      }
    }
    while (this.#level > 1 && this.#head.next[this.#level - 1] === null) this.#level--
    return true
  }

  /** The owner's 1-based rank, or 0 when it has no entry. */
  rank(ownerId: string): number {
    const key = this.#owners.get(ownerId)
    return key ? this.#countUpTo(key).count : 0
  }

  /**
   * Up to `limit` entries in rank order, starting just after `after` (a key that need not be in
   * the index: keyset paging, so entries are neither skipped nor repeated when others move).
   */
  page(after: RankKey | null, limit: number): { entries: Ranked<K>[]; more: boolean } {
    let { node, count } = after ? this.#countUpTo(after) : { node: this.#head, count: 0 }
    const entries: Ranked<K>[] = []
    let n = node.next[0]
    for (; n && entries.length < limit; n = n.next[0]) entries.push({ key: n.key, rank: ++count })
    return { entries, more: Boolean(n) }
  }

  /** The last node ordered at or before `key`, and how many entries that is. */
  #countUpTo(key: RankKey): { node: SkipNode<K>; count: number } {
    let x = this.#head
    let count = 0
    for (let i = this.#level - 1; i >= 0; i--) {
      for (let n = x.next[i]; n && this.#compare(n, key) <= 0; n = x.next[i]) {
        count += x.span[i]!
        x = n
      }
    }
    return { node: x, count }
  }

  #insert(key: K): number {
    const update = this.#update
    const rank = this.#rank
    let x = this.#head
    for (let i = this.#level - 1; i >= 0; i--) {
      rank[i] = i === this.#level - 1 ? 0 : rank[i + 1]!
      for (let n = x.next[i]; n && this.#compare(n, key) < 0; n = x.next[i]) {
        rank[i]! += x.span[i]!
        x = n
      }
      update[i] = x
    }
    const level = randomLevel()
    if (level > this.#level) {
      for (let i = this.#level; i < level; i++) {
        rank[i] = 0
        update[i] = this.#head
        this.#head.span[i] = this.size - 1
      }
      this.#level = level
    }
    const node = newNode(key, level)
    for (let i = 0; i < level; i++) {
      const u = update[i]!
      node.next[i] = u.next[i]!
      u.next[i] = node
      node.span[i] = u.span[i]! - (rank[0]! - rank[i]!)
      u.span[i] = rank[0]! - rank[i]! + 1
    }
    for (let i = level; i < this.#level; i++) update[i]!.span[i]!++
    return rank[0]! + 1
  }
}

function newNode<K extends RankKey>(key: K, level: number): SkipNode<K> {
  const next: (SkipNode<K> | null)[] = new Array(level).fill(null)
  const span: number[] = new Array(level).fill(0)
  return key ? { score: key.score, subscore: key.subscore, ownerId: key.ownerId, key, next, span } : { score: 0, subscore: 0, ownerId: '', key, next, span }
}

function randomLevel(): number {
  let level = 1
  while (level < MAX_LEVEL && Math.random() < PROMOTE) level++
  return level
}
