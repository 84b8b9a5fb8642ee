/**
 * A bad environment variable: the process prints `message` (one line) and exits 2 (CONTRACT §1).
 * A class of its own, not a plain Error, because the exit code is told apart by it.
 */
export class ConfigError extends Error {
  override name = 'ConfigError'
}
