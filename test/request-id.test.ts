import t from 'tap'
import { nextRequestId } from '../lib/http/request-id.js'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

t.test('request ids keep the UUID shape, one process prefix, and never repeat across a block of 2^24', (t) => {
  const first = nextRequestId()
  t.match(first, UUID)
  const prefix = first.slice(0, 24)
  // Run past the first block boundary (2^24 ids), checking the ids on both sides of it.
  const seen = new Set<string>([first])
  let previous = first
  for (let i = 1; i < 2 ** 24 + 3; i++) {
    const id = nextRequestId()
    if (i < 3 || i >= 2 ** 24 - 3) {
      t.match(id, UUID)
      t.equal(id.slice(0, 24), prefix, 'the random groups stay the same')
      t.notOk(seen.has(id), `id ${i} is new`)
      seen.add(id)
    } else if (id <= previous) {
      // Within a block the last group counts up as text too: a cheap check of every id.
      t.fail(`id ${i} (${id}) does not follow ${previous}`)
      break
    }
    previous = id
  }
  t.equal(seen.size, 9)
  t.end()
})
