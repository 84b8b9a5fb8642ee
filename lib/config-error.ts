/** A bad environment variable: the process prints `message` (one line) and exits 2 (CONTRACT §1). */
export class ConfigError extends Error {
  override name = 'ConfigError'
}
