import { randomBytes } from 'node:crypto'
import { mkdirSync, readFileSync, writeFileSync, chmodSync } from 'node:fs'
import path from 'node:path'

/**
 * The keys for `name`: from the environment value (a comma list, first one signs) when given,
 * else one generated once into `DATA_DIR/secrets/<name>` with mode 0600 and reused after.
 * The platform and the bridge share DATA_DIR, so they share generated secrets too.
 */
export function loadSecret(dataDir: string, name: string, fromEnv: string | null): string[] {
  if (fromEnv) return fromEnv.split(',')
  const dir = path.join(dataDir, 'secrets')
  const file = path.join(dir, name)
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  try {
    const existing = readFileSync(file, 'utf8').trim()
    if (existing) return [existing]
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
  }
  const secret = randomBytes(32).toString('base64url')
  try {
    writeFileSync(file, secret + '\n', { mode: 0o600, flag: 'wx' })
  } catch (err) {
    // Another process (the bridge or a second platform) wrote it first: use theirs.
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return [readFileSync(file, 'utf8').trim()]
    throw err
  }
  chmodSync(file, 0o600)
  return [secret]
}
