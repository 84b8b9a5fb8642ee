/**
 * A bad environment variable: the process prints `message` (one line) and exits 2 (CONTRACT §1).
 * A class of its own, not a plain Error, because the exit code is told apart by it.
 */
export class ConfigError extends Error {
  override name = 'ConfigError'
}

/** For a ConfigError, its one line on stderr and exit 2 (CONTRACT §1); any other error returns. */
export function exitOnConfigError(err: unknown): void {
  if (!(err instanceof ConfigError)) return
  process.stderr.write(`config: ${err.message}\n`)
  process.exit(2)
}
