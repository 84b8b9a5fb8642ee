import { readFileSync } from 'node:fs'
import type { Server } from 'node:net'

/** Descriptors kept from clients: the database, manifests and screenshots read, the bridge and Nakama. */
const RESERVED_DESCRIPTORS = 256
/** At most one `http.connections_full` line this often, with the count dropped since the last. */
const DROP_LOG_MS = 10_000

/** This process's soft limit on open descriptors (RLIMIT_NOFILE), or null where /proc does not say. */
function descriptorLimit(): number | null {
  try {
    const line = /^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'))
    return line ? Number(line[1]) : null
  } catch {
    return null
  }
}

/**
 * Hold the server's connections below the descriptor limit, so that at the limit a new client is
 * refused (closed at once) while the database and files can still be opened; without it, accept
 * failed with EMFILE, clients were reset, and nothing was logged. Each refusal is counted into one
 * `http.connections_full` log line per DROP_LOG_MS.
 */
export function capConnections(server: Server, log: (entry: Record<string, unknown>) => void, limit = descriptorLimit()): void {
  if (limit === null) return
  const max = Math.max(1, limit - Math.min(RESERVED_DESCRIPTORS, Math.floor(limit / 4)))
  server.maxConnections = max
  let dropped = 0
  let loggedAt = -Infinity
  server.on('drop', () => {
    dropped++
    const now = performance.now()
    if (now - loggedAt < DROP_LOG_MS) return
    log({ event: 'http.connections_full', max, dropped })
    loggedAt = now
    dropped = 0
  })
}
