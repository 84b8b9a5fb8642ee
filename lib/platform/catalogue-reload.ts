import type { Backend } from '../backend/backend.js'
import type { CatalogueHolder } from '../catalogue/load.js'
import { logLine, messageOf } from '../log.js'

/** A sync the backend refused (a database locked past its wait) is tried again this often. */
const SYNC_RETRY_MS = 2_000

/**
 * The catalogue reloader SIGHUP runs: read the manifests again and, when they are valid, tell the
 * backend their leaderboards. A refused sync is tried again until it goes through, each time with
 * the catalogue then in force (a later reload replaces it): until then the catalogue names boards
 * the backend does not serve as declared, so the wait is kept short.
 */
export function catalogueReloader(catalogue: CatalogueHolder, backend: Backend): () => void {
  let retry: NodeJS.Timeout | undefined
  // The first try waits for a lock as every write does; a retry refuses at once and comes back
  // later, so a lock held for long does not stall every request again and again.
  const sync = (wait: boolean): void => {
    clearTimeout(retry)
    backend.syncLeaderboards([...catalogue.current().leaderboards.values()], { wait }).catch((err: unknown) => {
      logLine({ event: 'catalogue.sync_failed', error: messageOf(err), retryInMs: SYNC_RETRY_MS })
      retry = setTimeout(() => sync(false), SYNC_RETRY_MS).unref()
    })
  }
  return () => {
    catalogue
      .reload()
      .then((ok: boolean) => ok && sync(true))
      .catch((err: unknown) => logLine({ event: 'catalogue.reload_failed', error: messageOf(err) }))
  }
}
