// TypeBox, as the rest of lib/ imports it. TypeBox 1.x ships as some 700 small ES modules, and
// resolving, reading and compiling them took 300-500 ms of every start (the catalogue issue's target: a start
// with 1,000 manifests answers within a second): `npm run build` bundles this one module into
// a single file (esbuild). Unbundled, it still works, only slower to load.
export { default as Type } from 'typebox'
export type { Static, TSchema } from 'typebox'
export { Compile, type Validator } from 'typebox/compile'
export { Settings } from 'typebox/system'
