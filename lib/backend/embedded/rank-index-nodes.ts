// The nodes of the counted B+ tree behind lib/backend/embedded/rank-index.ts, and the helpers that keep their
// counts and first keys right.

// Node widths: a leaf of 64 keys or an inner node of 64 children is a few cache lines of pointers,
// so a million entries are 4 levels deep. Bulk builds fill to 48 to leave room for inserts.
export const MAX_WIDTH = 64
export const BUILD_WIDTH = 48

/** A leaf: keys in rank order, linked to its neighbours for paging. */
export interface Leaf<K> {
  leaf: true
  keys: K[]
  parent: Inner<K> | null
  next: Leaf<K> | null
  prev: Leaf<K> | null
}

/** An inner node: children with their entry counts and first keys. */
export interface Inner<K> {
  leaf: false
  children: Node<K>[]
  /** Entries under each child. */
  counts: number[]
  /** The first key under each child, to descend by comparison. */
  firsts: K[]
  parent: Inner<K> | null
}

/** A node of the tree. */
export type Node<K> = Leaf<K> | Inner<K>

/** Where an owner's entry is: its key and the leaf holding it (kept up to date on splits). */
export interface Slot<K> {
  key: K
  leaf: Leaf<K>
}

/** An empty leaf. */
export function newLeaf<K>(): Leaf<K> {
  return { leaf: true, keys: [], parent: null, next: null, prev: null }
}

/** An inner node over `children`, which become its own. */
export function newInner<K>(children: Node<K>[]): Inner<K> {
  const inner: Inner<K> = { leaf: false, children, counts: children.map(sizeOf), firsts: children.map(firstOf), parent: null }
  for (const child of children) child.parent = inner
  return inner
}

/** Entries under a node. */
export function sizeOf<K>(node: Node<K>): number {
  return node.leaf ? node.keys.length : node.counts.reduce((a, b) => a + b, 0)
}

/** The first key under a node. */
export function firstOf<K>(node: Node<K>): K {
  return node.leaf ? node.keys[0]! : node.firsts[0]!
}

/** After a node's first key changed: fix the separators above it, as far as it is a first child. */
export function updateFirst<K>(node: Node<K>): void {
  for (let p = node.parent; p; node = p, p = p.parent) {
    const i = p.children.indexOf(node)
    p.firsts[i] = firstOf(node)
    if (i !== 0) return
  }
}
