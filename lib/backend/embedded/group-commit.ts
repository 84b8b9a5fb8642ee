import type Database from 'better-sqlite3'
import { isBusy, unavailableIfBusy } from './db.js'

interface Pending {
  run: () => void
  /** The record it writes: a later write of the same record in the batch is built on this one. */
  key: string | null
  resolve: () => void
  reject: (err: unknown) => void
}

/**
 * Group commit: the writes queued during one event-loop turn run in one transaction, and each is
 * acknowledged only after that transaction has committed. With WAL a commit is in the log before
 * it returns, so an acknowledged write survives a crash of the process; one commit per turn instead
 * of per write is what lets thousands of writes a second through.
 */
export class GroupCommit {
  #pending: Pending[] = []
  constructor(
    readonly db: Database.Database,
    /**
     * Called when a batch failed, after its writes were replayed one by one, with the keys of the
     * batch's writes: the memory of those records must be reloaded (no other was touched).
     */
    readonly onFailure: (keys: string[]) => void,
  ) {}

  /** Queue `run` (synchronous SQL) for the next commit, writing the record `key`; resolves once it is committed. */
  submit(run: () => void, key: string | null = null): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#pending.push({ run, key, resolve, reject })
      if (this.#pending.length === 1) setImmediate(() => this.flush())
    })
  }

  /** Commit everything queued now (also used on close). */
  flush(): void {
    const batch = this.#pending
    if (batch.length === 0) return
    this.#pending = []
    try {
      this.db.transaction(() => {
        for (const write of batch) write.run()
      }).immediate()
    } catch (err) {
      // Another process held the write lock past busy_timeout: replaying each write would wait
      // that long again per write. All are refused (503), and the owner resyncs its memory.
      if (isBusy(err)) {
        const unavailable = unavailableIfBusy(err)
        for (const write of batch) write.reject(unavailable)
        this.onFailure(keysOf(batch))
        return
      }
      // One bad write must not sink the others: replay each in its own transaction, so only the
      // writes that fail themselves are refused, then let the owner resync its memory. A write of
      // a record that failed earlier in the batch is refused with it: its values were built on the
      // failed one (an UPDATE of a row never inserted would change nothing and be confirmed).
      const failed = new Map<string, unknown>()
      for (const write of batch) {
        const earlier = write.key === null ? undefined : failed.get(write.key)
        if (earlier !== undefined) {
          write.reject(earlier)
          continue
        }
        try {
          this.db.transaction(write.run).immediate()
          write.resolve()
        } catch (err) {
          // Another process may take the lock between the batch's rollback and this write's replay.
          const refusal = unavailableIfBusy(err)
          if (write.key !== null) failed.set(write.key, refusal)
          write.reject(refusal)
        }
      }
      this.onFailure(keysOf(batch))
      return
    }
    for (const write of batch) write.resolve()
  }
}

function keysOf(batch: Pending[]): string[] {
  return batch.flatMap((write) => (write.key === null ? [] : [write.key]))
}
