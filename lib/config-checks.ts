import { accessSync, constants, lstatSync, mkdirSync, readlinkSync, statSync } from 'node:fs'
import path from 'node:path'
import { ConfigError } from './config-error.js'

// Values that are well formed but turn out unusable on this machine: the same one-line
// configuration error as a malformed value (CONTRACT §1), found when the process first uses them.

/**
 * The directories a process needs, checked (and DATA_DIR created) before anything reads them, so
 * an unusable path is reported against its own variable: DATA_DIR must be a directory, writable
 * unless `readOnly` (the bridge only reads a secret the platform generated there), and
 * SCREENSHOTS_DIR a directory this user can read when it exists (none simply means no captures yet).
 */
export function checkDirectories(dirs: { dataDir: string; screenshotsDir?: string }, { readOnly = false } = {}): void {
  ensureDataDir(dirs.dataDir)
  if (!readOnly) checkWritable(dirs.dataDir)
  if (dirs.screenshotsDir !== undefined) checkScreenshotsDir(dirs.screenshotsDir)
}

/** SCREENSHOTS_DIR, when it exists, must be a directory this user can read (also for `check`, which writes nothing). */
export function checkScreenshotsDir(screenshotsDir: string): void {
  const code = directoryCode(screenshotsDir, constants.R_OK | constants.X_OK)
  if (code === null || code === 'ENOENT') return
  const problem = code === NOT_A_DIRECTORY ? 'is not a directory' : `cannot be read (${code})`
  throw new ConfigError(`SCREENSHOTS_DIR: ${JSON.stringify(screenshotsDir)} ${problem}; expected a directory path`)
}

/** directoryCode's answer for a path that exists and is not a directory (stat's own ENOTDIR is a path through a file). */
const NOT_A_DIRECTORY = 'not a directory'

/** Why `dir` is not a directory this user may use as `access` says (accessSync's mode): NOT_A_DIRECTORY or an errno code; null when it is. */
function directoryCode(dir: string, access: number): string | null {
  try {
    if (!statSync(dir).isDirectory()) return NOT_A_DIRECTORY
    accessSync(dir, access)
    return null
  } catch (err) {
    return (err as NodeJS.ErrnoException).code ?? 'error'
  }
}

/**
 * The mode of DATA_DIR as octal text when other accounts may enter it (the developer shells'
 * account among them, on a host that runs the bridge too), else null. A DATA_DIR that already
 * existed keeps its modes; the platform says so at start rather than change them.
 */
export function openToOthers(dataDir: string): string | null {
  const mode = statSync(dataDir).mode & 0o777
  return mode & 0o005 ? mode.toString(8).padStart(4, '0') : null
}

/**
 * For `check`, which makes nothing: what checkDirectories would refuse of DATA_DIR, as the start
 * words it. A directory this user may write (unless `readOnly`, as there); or, not there yet, one
 * it may make (its nearest parent that exists, writable).
 */
export function checkDataDir(dataDir: string, { readOnly = false } = {}): void {
  if (dataDirExists(dataDir)) return readOnly ? undefined : checkWritable(dataDir)
  let parent = path.dirname(dataDir)
  while (!dataDirExists(parent, dataDir) && path.dirname(parent) !== parent) parent = path.dirname(parent)
  try {
    accessSync(parent, constants.W_OK | constants.X_OK)
  } catch (err) {
    throw dataDirProblem(dataDir, `cannot be created (${(err as NodeJS.ErrnoException).code})`)
  }
}

function checkWritable(dataDir: string): void {
  try {
    accessSync(dataDir, constants.W_OK)
  } catch {
    throw new ConfigError(`DATA_DIR: ${JSON.stringify(dataDir)} is not writable; expected a directory this user can write`)
  }
}

/**
 * Create DATA_DIR `dir` (0700: the database and secrets are this account's alone) and its missing
 * parents (0755) one level at a time. (mkdirSync's own recursive mode loops without end under a
 * parent that refuses new entries, such as /proc.)
 */
const dataDirProblem = (value: string, what: string): ConfigError => new ConfigError(`DATA_DIR: ${JSON.stringify(value)} ${what}; expected a directory path`)

/** Whether DATA_DIR (or a parent of it, `dir`) is there: a directory, or not yet (false); anything else is a ConfigError. Writes nothing. */
export function dataDirExists(dir: string, value = dir): boolean {
  try {
    if (statSync(dir).isDirectory()) return true
    throw dataDirProblem(value, 'is not a directory')
  } catch (err) {
    if (err instanceof ConfigError) throw err
    const code = (err as NodeJS.ErrnoException).code
    if (code !== 'ENOENT') throw dataDirProblem(value, `cannot be used (${code})`)
    // A symbolic link to nothing is there for mkdir (EEXIST) and not for stat: it is made neither way.
    const target = danglingLink(dir)
    if (target === null) return false
    const link = `a symbolic link to ${JSON.stringify(target)}, which does not exist`
    throw dataDirProblem(value, dir === value ? `is ${link}` : `cannot be created: ${JSON.stringify(dir)} is ${link}`)
  }
}

/** What the symbolic link `dir` points to, or null when `dir` is no symbolic link. */
function danglingLink(dir: string): string | null {
  try {
    return lstatSync(dir).isSymbolicLink() ? readlinkSync(dir) : null
  } catch {
    return null
  }
}

function ensureDataDir(dir: string, value = dir, mode = 0o700): void {
  const problem = (what: string): ConfigError => dataDirProblem(value, what)
  if (dataDirExists(dir, value)) return
  const parent = path.dirname(dir)
  if (parent !== dir) ensureDataDir(parent, value, 0o755)
  try {
    mkdirSync(dir, { mode })
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code !== 'EEXIST') throw problem(`cannot be created (${code})`)
  }
}

/**
 * Why `server.listen` failed, as a configuration problem of HOST/PORT (or their TERMINAL_
 * counterparts): the address does not exist on this machine, the port is taken or privileged.
 */
export function listenProblem(
  err: NodeJS.ErrnoException,
  { hostVar, host, portVar, port, examples = '127.0.0.1 or 0.0.0.0' }: { hostVar: string; host: string; portVar: string; port: number; examples?: string },
): ConfigError {
  const code = err.code ?? 'error'
  if (code === 'EADDRINUSE') return new ConfigError(`${portVar}: ${port} is already in use on ${host}; expected a free port`)
  if (code === 'EACCES') return new ConfigError(`${portVar}: ${port} needs privileges this process lacks (EACCES); expected a port from 1024 up`)
  return new ConfigError(`${hostVar}: ${JSON.stringify(host)} cannot be listened on (${code}); expected an address of this machine, such as ${examples}`)
}

/**
 * SHELL must name a file this process may execute: a missing shell is a bad value at start, not a
 * failed `create` later. A root bridge checks again once it is the shell account (`asUser`): root
 * may run a shell of mode 0700 that the account then cannot (every `create` answered exit 126).
 */
export function checkShell(shell: string, asUser?: string): void {
  let problem: string | null = null
  try {
    const info = statSync(shell)
    if (!info.isFile()) problem = 'is not a file'
    else if ((info.mode & 0o111) === 0) problem = 'is not executable'
    else accessSync(shell, constants.X_OK)
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    problem = code === 'EACCES' && asUser !== undefined ? `is not executable by ${JSON.stringify(asUser)}` : `cannot be used (${code ?? 'error'})`
  }
  if (problem) throw new ConfigError(`SHELL: ${JSON.stringify(shell)} ${problem}; expected an absolute path to a shell`)
}

/**
 * A root bridge's shells start in TERMINAL_USER's home, so once it is that account it must be able
 * to enter it: a home the account cannot reach (another owner's 0700, or /home under the terminal
 * unit's ProtectHome=yes, as for an account `.ci/run` made) ended every shell at once otherwise.
 */
export function checkHome(home: string, asUser: string): void {
  const found = directoryCode(home, constants.X_OK)
  const code = found === NOT_A_DIRECTORY ? 'ENOTDIR' : found
  if (code) {
    throw new ConfigError(`TERMINAL_USER: the home directory ${JSON.stringify(home)} of ${JSON.stringify(asUser)} cannot be entered by it (${code}); expected a directory the account owns, such as /var/lib/${asUser}`)
  }
}

/** MANIFESTS_DIR must be a readable directory: a missing one is a bad value (exit 2), not a bad catalogue (exit 1). */
export function checkManifestsDir(dir: string): void {
  const code = directoryCode(dir, constants.R_OK | constants.X_OK)
  if (code === null) return
  const problem = code === NOT_A_DIRECTORY ? 'is not a directory' : code === 'ENOENT' ? 'does not exist' : `cannot be read (${code})`
  throw new ConfigError(`MANIFESTS_DIR: ${JSON.stringify(dir)} ${problem}; expected a directory of game manifests`)
}
