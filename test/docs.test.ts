import t from 'tap'
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { ROOT } from './helpers/platform.js'

/** Every .ts file under `dir`. */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name)
    return entry.isDirectory() ? sources(full) : entry.name.endsWith('.ts') ? [full] : []
  })
}

// As Fastify checks that every error code is documented: each status and code lib/ can answer
// (an HttpError, or the parser's answers in client-error.ts) appears in the README with its status.
t.test('every error code the platform answers is in the README with its status', async (t) => {
  const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8')
  const found = new Map<string, string>()
  for (const file of sources(path.join(ROOT, 'lib'))) {
    const text = readFileSync(file, 'utf8')
    for (const m of text.matchAll(/HttpError\(\s*(\d{3}),\s*'([A-Z_]+)'/g)) found.set(`${m[1]} ${m[2]}`, path.relative(ROOT, file))
    for (const m of text.matchAll(/\[\s*(\d{3}),\s*'[^']*',\s*'([A-Z_]+)'/g)) found.set(`${m[1]} ${m[2]}`, path.relative(ROOT, file))
  }
  t.ok(found.size >= 20, `codes found in lib/: ${found.size}`)
  for (const [key, file] of found) {
    const [status, code] = key.split(' ')
    t.match(readme, new RegExp(`\\b${status}\\b[\\s|]{0,4}\`${code}\``), `${status} ${code} (${file}) is documented`)
  }
})
