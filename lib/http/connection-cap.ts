import { readFileSync } from 'node:fs'
import type { Server } from 'node:net'

/** Descriptors kept from clients: the database, manifests and screenshots read, the bridge and Nakama. */
const RESERVED_DESCRIPTORS = 256
/** One `http.connections_full` line at the first refusal, then one this often while more come, with the count since the last. */
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
 * failed with EMFILE, clients were reset, and nothing was logged. Refusals are counted into
 * `http.connections_full` log lines, at most one per DROP_LOG_MS.
 */
export function capConnections(server: Server, log: (entry: Record<string, unknown>) => void): void {
  const limit = descriptorLimit()
  if (limit === null) return
  const max = Math.max(1, limit - Math.min(RESERVED_DESCRIPTORS, Math.floor(limit / 4)))
  server.maxConnections = max
  let dropped = 0
  let timer: NodeJS.Timeout | undefined
  const report = (): void => {
    timer = undefined
    if (dropped === 0) return
    log({ event: 'http.connections_full', max, dropped })
    dropped = 0
    timer = setTimeout(report, DROP_LOG_MS).unref()
  }
  server.on('drop', () => {
    dropped++
    if (timer === undefined) report()
  })
}
