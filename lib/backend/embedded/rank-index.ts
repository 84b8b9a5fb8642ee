import type { RankKey } from '../../leaderboard.js'
import { BUILD_WIDTH, MAX_WIDTH, firstOf, newInner, newLeaf, sizeOf, updateFirst, type Inner, type Leaf, type Node, type Slot } from './rank-index-nodes.js'

/** One entry of a page with its 1-based rank. */
interface Ranked<K> {
  key: K
  rank: number
}

/**
 * An order-statistic index of one leaderboard period: a counted B+ tree (each inner node knows
 * how many entries each child holds) with linked leaves, plus one slot per owner. Insert, remove
 * and keyset paging are O(log n); an owner's rank is read bottom-up from its leaf, summing the
 * counts left of the path, without a single comparison. Nodes are never merged on removal (only
 * emptied ones are dropped), so the height is bounded by the largest size the index has had.
 */
export class RankIndex<K extends RankKey> {
  readonly #compare: (a: RankKey, b: RankKey) => number
  readonly #owners = new Map<string, Slot<K>>()
  #root: Node<K> = newLeaf()

  constructor(compare: (a: RankKey, b: RankKey) => number) {
    this.#compare = compare
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
    if (sorted.length === 0) return index
    let level: Node<K>[] = []
    let prev: Leaf<K> | null = null
    for (let i = 0; i < sorted.length; i += BUILD_WIDTH) {
      const leaf: Leaf<K> = { ...newLeaf<K>(), keys: sorted.slice(i, i + BUILD_WIDTH), prev }
      if (prev) prev.next = leaf
      prev = leaf
      for (const key of leaf.keys) {
        if (index.#owners.has(key.ownerId)) throw new Error(`duplicate owner ${key.ownerId} in rank index`)
        index.#owners.set(key.ownerId, { key, leaf })
      }
      level.push(leaf)
    }
    while (level.length > 1) {
      const up: Node<K>[] = []
      for (let i = 0; i < level.length; i += BUILD_WIDTH) up.push(newInner(level.slice(i, i + BUILD_WIDTH)))
      level = up
    }
    index.#root = level[0]!
    return index
  }

  /** Number of ranked entries. */
  get size(): number {
    return this.#owners.size
  }

  /** The owner's entry, if any. */
  get(ownerId: string): K | undefined {
    return this.#owners.get(ownerId)?.key
  }

  /** Put the owner's entry in place of its previous one; returns its new rank. */
  set(key: K): number {
    this.remove(key.ownerId)
    let node = this.#root
    while (!node.leaf) {
      const i = this.#childIndex(node, key)
      node.counts[i]!++
      node = node.children[i]!
    }
    const pos = this.#upperBound(node.keys, key)
    node.keys.splice(pos, 0, key)
    this.#owners.set(key.ownerId, { key, leaf: node })
    if (pos === 0) updateFirst(node)
    if (node.keys.length > MAX_WIDTH) this.#splitLeaf(node)
    return this.rank(key.ownerId)
  }

  /** Remove the owner's entry; false when it had none. */
  remove(ownerId: string): boolean {
    const slot = this.#owners.get(ownerId)
    if (!slot) return false
    this.#owners.delete(ownerId)
    const leaf = slot.leaf
    const pos = leaf.keys.indexOf(slot.key)
    leaf.keys.splice(pos, 1)
    for (let node: Node<K> = leaf, p = node.parent; p; node = p, p = p.parent) p.counts[p.children.indexOf(node)]!--
    if (leaf.keys.length === 0 && leaf.parent) this.#drop(leaf)
    else if (pos === 0 && leaf.keys.length > 0) updateFirst(leaf)
    // A root with one child adds a level for nothing.
    while (!this.#root.leaf && this.#root.children.length === 1) {
      this.#root = this.#root.children[0]!
      this.#root.parent = null
    }
    return true
  }

  /** The owner's 1-based rank, or 0 when it has no entry. */
  rank(ownerId: string): number {
    const slot = this.#owners.get(ownerId)
    if (!slot) return 0
    let rank = slot.leaf.keys.indexOf(slot.key) + 1
    for (let node: Node<K> = slot.leaf, p = node.parent; p; node = p, p = p.parent) {
      const i = p.children.indexOf(node)
      for (let j = 0; j < i; j++) rank += p.counts[j]!
    }
    return rank
  }

  /**
   * Up to `limit` entries in rank order, starting just after `after` (a key that need not be in
   * the index: keyset paging, so entries are neither skipped nor repeated when others move).
   */
  page(after: RankKey | null, limit: number): { entries: Ranked<K>[]; more: boolean } {
    let node = this.#root
    let count = 0
    while (!node.leaf) {
      const i = after ? this.#childIndex(node, after) : 0
      for (let j = 0; j < i; j++) count += node.counts[j]!
      node = node.children[i]!
    }
    let leaf: Leaf<K> | null = node
    let pos = after ? this.#upperBound(node.keys, after) : 0
    count += pos
    const entries: Ranked<K>[] = []
    while (leaf && entries.length < limit) {
      if (pos < leaf.keys.length) {
        entries.push({ key: leaf.keys[pos++]!, rank: ++count })
      } else {
        leaf = leaf.next
        pos = 0
      }
    }
    return { entries, more: leaf !== null && (pos < leaf.keys.length || leaf.next !== null) }
  }

  /** The child of `node` whose range holds `key`: the last whose first key is not after it. */
  #childIndex(node: Inner<K>, key: RankKey): number {
    let lo = 1
    let hi = node.firsts.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (this.#compare(node.firsts[mid]!, key) <= 0) lo = mid + 1
      else hi = mid
    }
    return lo - 1
  }

  /** The first position in `keys` ordered after `key`. */
  #upperBound(keys: K[], key: RankKey): number {
    let lo = 0
    let hi = keys.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (this.#compare(keys[mid]!, key) <= 0) lo = mid + 1
      else hi = mid
    }
    return lo
  }

  #splitLeaf(leaf: Leaf<K>): void {
    const right: Leaf<K> = { ...newLeaf<K>(), keys: leaf.keys.splice(leaf.keys.length >>> 1), prev: leaf, next: leaf.next }
    if (leaf.next) leaf.next.prev = right
    leaf.next = right
    for (const key of right.keys) this.#owners.get(key.ownerId)!.leaf = right
    this.#addSibling(leaf, right)
  }

  /** Put `right` just after `left` in `left`'s parent (a new root when there is none), splitting upwards. */
  #addSibling(left: Node<K>, right: Node<K>): void {
    const parent = left.parent
    if (!parent) {
      this.#root = newInner([left, right])
      return
    }
    const i = parent.children.indexOf(left)
    const moved = sizeOf(right)
    parent.counts[i]! -= moved
    parent.children.splice(i + 1, 0, right)
    parent.counts.splice(i + 1, 0, moved)
    parent.firsts.splice(i + 1, 0, firstOf(right))
    right.parent = parent
    if (parent.children.length <= MAX_WIDTH) return
    const half = parent.children.length >>> 1
    const sibling = newInner(parent.children.splice(half))
    parent.counts.splice(half)
    parent.firsts.splice(half)
    this.#addSibling(parent, sibling)
  }

  /** Take an emptied node out of its parent, and the parent too when that empties it. */
  #drop(node: Node<K>): void {
    if (node.leaf) {
      if (node.prev) node.prev.next = node.next
      if (node.next) node.next.prev = node.prev
    }
    const parent = node.parent!
    const i = parent.children.indexOf(node)
    parent.children.splice(i, 1)
    parent.counts.splice(i, 1)
    parent.firsts.splice(i, 1)
    if (parent.children.length === 0 && parent.parent) this.#drop(parent)
    else if (parent.children.length === 0) this.#root = newLeaf()
    else if (i === 0) updateFirst(parent)
  }
}
