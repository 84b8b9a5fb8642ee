import t from 'tap'
import { spawnSync } from 'node:child_process'
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { ROOT } from './helpers/platform.js'

// `npm run build` bundles TypeBox into dist/lib/typebox.js (lib/typebox.ts says why: loading its
// ~700 modules one by one took 300-500 ms of every start). Unbundled it would still work, only
// slower, so nothing else would notice the bundling step going missing: this test does.
t.test('the built TypeBox module is one bundle that loads no TypeBox module of its own', async (t) => {
  const built = readFileSync(path.join(ROOT, 'dist/lib/typebox.js'), 'utf8')
  t.notMatch(built, /\bfrom\s*["']typebox/, 'no import of the typebox package is left')
  t.notMatch(built, /\bimport\s*\(?\s*["']\.{1,2}\//, 'no relative import either')
  const typebox = await import('../lib/typebox.js')
  const schema = typebox.Compile(typebox.Type.Object({ n: typebox.Type.Integer() }))
  t.equal(schema.Check({ n: 1 }), true)
  t.equal(schema.Check({ n: 1.5 }), false)
  t.type(typebox.Settings.Set, 'function')
})

t.test('bin/platform and bin/terminal-bridge in a clone not yet built say so in one line, exit 1, no stack trace', async (t) => {
  const clone = realpathSync(mkdtempSync(path.join(tmpdir(), 'unbuilt-')))
  t.teardown(() => rmSync(clone, { recursive: true, force: true }))
  mkdirSync(path.join(clone, 'bin'))
  for (const name of ['platform', 'terminal-bridge']) {
    copyFileSync(path.join(ROOT, 'bin', name), path.join(clone, 'bin', name))
    const run = spawnSync(path.join(clone, 'bin', name), ['check'], { encoding: 'utf8' })
    t.strictSame([run.status, run.stdout, run.stderr], [1, '', `${name}: not built yet: run npm install in ${clone}\n`], name)
  }
})

// .taprc drops @tapjs/typescript (its comment says why). tap builds its plugin set into
// node_modules, and a runner started with the installed default set passes that set's loaders to
// the test files of its first run, rebuilding only for the runs after: `npm install` builds tap
// with .taprc's set (the `prepare` script), so the first `npm test` of a fresh clone has it too.
t.test('test files run without a TypeScript loader, from the first run of a fresh install', async (t) => {
  const options = [...process.execArgv, process.env.NODE_OPTIONS ?? ''].join(' ')
  t.notMatch(options, /@tapjs[\\/]typescript|tsimp|ts-node/, 'no TypeScript loader in the test process')
  t.match(options, /@tapjs[\\/]processinfo/, "tap's own loaders are there: the check reads the right options")
})
