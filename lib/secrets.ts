import { randomBytes } from 'node:crypto'
import { accessSync, closeSync, constants, copyFileSync, existsSync, fsyncSync, linkSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { ConfigError } from './config-error.js'

/** A generated secret is 43 characters (32 random bytes); a file holding fewer than this is refused. */
const MIN_SECRET_LENGTH = 32

/**
 * The keys for `name`: from the environment value (a comma list, first one signs) when given,
 * else one generated once into `DATA_DIR/secrets/<name>` with mode 0600 and reused after.
 * The platform and the bridge share DATA_DIR, so they share generated secrets too.
 *
 * The file appears whole or not at all: it is written under a name of its own, then linked into
 * place, which fails when another process (the bridge starting beside the platform) got there
 * first. Written in place, a reader between the create and the write could find it empty, and an
 * empty key signs tickets and tokens anyone can forge. A file that holds no usable secret
 * (someone truncated it) is a configuration error, never a key.
 */
export function loadSecret(dataDir: string, name: string, fromEnv: string | null): string[] {
  if (fromEnv) return fromEnv.split(',')
  const file = path.join(dataDir, 'secrets', name)
  try {
    return loadOrCreate(file)
  } catch (err) {
    throw secretFileError(file, err)
  }
}

/**
 * What loadSecret would refuse of DATA_DIR's secret, without making one: for `check`. A stored file
 * it cannot use; or, when there is none, a folder this user may not write where it would make one
 * (`secrets/`, or DATA_DIR when that is not there yet; a DATA_DIR not made yet is checkDataDir's).
 */
export function checkStoredSecret(dataDir: string, name: string): void {
  const file = path.join(dataDir, 'secrets', name)
  try {
    const into = [path.dirname(file), dataDir].find((dir) => existsSync(dir))
    if (readSecret(file) === null && into !== undefined) accessSync(into, constants.W_OK | constants.X_OK)
  } catch (err) {
    throw secretFileError(file, err)
  }
}

/**
 * A DATA_DIR this user may read but not write (or a secrets folder it may not read): the one
 * configuration line, not a stack trace.
 */
function secretFileError(file: string, err: unknown): unknown {
  const code = (err as NodeJS.ErrnoException).code
  if (err instanceof ConfigError || code === undefined) return err
  return new ConfigError(`DATA_DIR: the secret file ${JSON.stringify(file)} cannot be read or created (${code}); expected a DATA_DIR this user can write, or the secret in its environment variable`)
}

/**
 * The secret as loadSecret would give it, without making one: null when the environment has none
 * and DATA_DIR holds none (or cannot be read). For commands that only use a secret the platform
 * made, and must not leave a file of their own user where the platform expects its own.
 */
export function existingSecret(dataDir: string, name: string, fromEnv: string | null): string[] | null {
  if (fromEnv) return fromEnv.split(',')
  try {
    const secret = readSecret(path.join(dataDir, 'secrets', name))
    return secret === null ? null : [secret]
  } catch {
    return null
  }
}

function loadOrCreate(file: string): string[] {
  // One level (DATA_DIR is checked to exist first): mkdirSync's recursive mode loops without end
  // under a directory that refuses new entries, such as /proc.
  try {
    mkdirSync(path.dirname(file), { mode: 0o700 })
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
  }
  removeStaleDrafts(file)
  const existing = readSecret(file)
  if (existing !== null) return [existing]
  const secret = randomBytes(32).toString('base64url')
  const draft = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`
  try {
    writeFileSync(draft, secret + '\n', { mode: 0o600, flag: 'wx' })
    syncPath(draft)
    publish(draft, file)
    // The link itself on disk too: a power cut after the start must not take back a key that has
    // signed cookies and tokens (an empty file in its place would stop the next start).
    syncDirectory(path.dirname(file))
  } catch (err) {
    // Another process made it first: use theirs, which is whole.
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
    const theirs = readSecret(file)
    // Nothing readable stands there after all (a link to nothing): no secret, and never a null key.
    if (theirs === null) throw new ConfigError(`DATA_DIR: ${JSON.stringify(file)} holds no usable secret (a link to nothing); expected at least ${MIN_SECRET_LENGTH} characters on one line: delete the file to have a new one generated`)
    return [theirs]
  } finally {
    // The draft goes whatever happened (a failed write leaves a partial one).
    rmSync(draft, { force: true })
  }
  return [secret]
}

/** Flush a file's bytes, or a directory's entries, to disk. */
function syncPath(target: string): void {
  const fd = openSync(target, 'r')
  try {
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}

/** syncPath where the file system can (some refuse fsync on a directory: EINVAL). */
function syncDirectory(dir: string): void {
  try {
    syncPath(dir)
  } catch {
    // The secret is in place all the same; only a power cut could still take its entry back.
  }
}

/** A draft lives milliseconds; one older than this is the leftover of a process killed while writing it. */
const STALE_DRAFT_MS = 60_000

/** Remove the leftover drafts of `file` (`<name>.<pid>.<random>.tmp`), never one a process beside this one is writing. */
function removeStaleDrafts(file: string): void {
  const prefix = `${path.basename(file)}.`
  for (const entry of readdirSync(path.dirname(file))) {
    if (!entry.startsWith(prefix) || !entry.endsWith('.tmp')) continue
    const draft = path.join(path.dirname(file), entry)
    try {
      if (Date.now() - statSync(draft).mtimeMs > STALE_DRAFT_MS) rmSync(draft, { force: true })
    } catch {
      // Gone meanwhile (its process linked and removed it): nothing to remove.
    }
  }
}

/**
 * Link the draft into place, failing with EEXIST when the file exists. A file system without hard
 * links (vfat, some network mounts) gets an exclusive copy instead: the file then exists a moment
 * before its bytes do, which readSecret waits out.
 */
function publish(draft: string, file: string): void {
  try {
    linkSync(draft, file)
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP') throw err
    copyFileSync(draft, file, constants.COPYFILE_EXCL)
    syncPath(file)
  }
}

/** Waits of READ_WAIT_MS for a secret file still being written (see publish) before it counts as unusable. */
const READ_TRIES = 10
const READ_WAIT_MS = 20

/** The secret in `file`, or null when there is no file; a file without a usable secret is a ConfigError. */
function readSecret(file: string): string | null {
  let secret = ''
  for (let attempt = 0; attempt < READ_TRIES; attempt++) {
    if (attempt > 0) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, READ_WAIT_MS)
    try {
      secret = readFileSync(file, 'utf8').trim()
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null
      throw err
    }
    if (secret.length >= MIN_SECRET_LENGTH) break
  }
  if (secret.length < MIN_SECRET_LENGTH || /[\s,]/.test(secret)) {
    throw new ConfigError(`DATA_DIR: ${JSON.stringify(file)} holds no usable secret (${secret.length} characters); expected at least ${MIN_SECRET_LENGTH} characters on one line: delete the file to have a new one generated`)
  }
  return secret
}
