/** CONTRACT §2: after this many failed sign-ins from one address within WINDOW_MS, sign-ins answer 429. */
const MAX_FAILURES = 10
const WINDOW_MS = 60_000
/** Password checks one address may have waiting for a place; past it they answer 429 at once. */
const MAX_WAITING = 100

/** What `acquire` answers: a place to check a password, or the milliseconds to wait for a sign-in. */
export type Acquired = { ok: true; release: (failed: boolean, now: number) => Promise<void> } | { ok: false; waitMs: number }

/** Where the failures are kept: the game backend's event windows (Backend.eventWindow). */
export type FailureWindows = (key: string, now: number, windowMs: number, record?: { keep: number }) => Promise<number[]>

interface Checks {
  running: number
  waiting: (() => void)[]
}

/**
 * Failed sign-ins per client address in a sliding minute, kept in the game backend (CONTRACT §1:
 * limiter state lives there), so the count holds across restarts and every platform instance
 * sees the same one. The first 10 failures answer 401; from then every sign-in (guest, register,
 * login) answers 429 until the oldest of those 10 is a minute old.
 *
 * A password check takes a while (scrypt), so an address's checks in flight on this instance are
 * held to the failures it has left: with 7 failures in the minute, 3 checks run at once and any
 * more wait for one of them to end. Guesses sent in parallel cannot pass the limit (of 30 wrong
 * ones, 10 are checked and 20 answer 429 once those 10 have failed), and right passwords sent in
 * parallel all get in, however many. The clock is passed in.
 */
export class SigninLimit {
  readonly #windows: FailureWindows
  readonly #checks = new Map<string, Checks>()

  constructor(windows: FailureWindows) {
    this.#windows = windows
  }

  /** Milliseconds `address` must wait before signing in, 0 when it may try now. */
  async waitMs(address: string, now: number): Promise<number> {
    return waitOf(await this.#failures(address, now), now)
  }

  /**
   * A place to check a password from `address`: at once when its failures and checks in flight
   * leave one, else after a check in flight ends. Answers a wait instead once the address is
   * limited (or too many checks are waiting). The holder must call `release` once.
   */
  async acquire(address: string, now: () => number): Promise<Acquired> {
    for (;;) {
      const at = now()
      const failures = await this.#failures(address, at)
      const waitMs = waitOf(failures, at)
      let checks = this.#checks.get(address)
      if (waitMs > 0) return this.#refuse(address, checks, waitMs)
      if (checks === undefined) this.#checks.set(address, (checks = { running: 0, waiting: [] }))
      if (failures.length + checks.running < MAX_FAILURES) {
        checks.running++
        return { ok: true, release: this.#releaser(address, checks) }
      }
      if (checks.waiting.length >= MAX_WAITING) return this.#refuse(address, checks, 1000)
      await new Promise<void>((resolve) => checks.waiting.push(resolve))
    }
  }

  /** Checks in flight from `address` and waiting for a place (for tests and the health of the map). */
  inFlight(address: string): { running: number; waiting: number } {
    const checks = this.#checks.get(address)
    return { running: checks?.running ?? 0, waiting: checks?.waiting.length ?? 0 }
  }

  /** Count one failed sign-in from `address` at `now`. */
  async fail(address: string, now: number): Promise<void> {
    await this.#windows(key(address), now, WINDOW_MS, { keep: MAX_FAILURES })
  }

  #failures(address: string, now: number): Promise<number[]> {
    return this.#windows(key(address), now, WINDOW_MS)
  }

  #refuse(address: string, checks: Checks | undefined, waitMs: number): Acquired {
    if (checks && checks.running === 0 && checks.waiting.length === 0) this.#checks.delete(address)
    return { ok: false, waitMs }
  }

  #releaser(address: string, checks: Checks): (failed: boolean, now: number) => Promise<void> {
    let released = false
    return async (failed, now) => {
      if (released) return
      released = true
      try {
        // Recorded before the place is given back: a check waiting for it must see this failure.
        if (failed) await this.fail(address, now)
      } finally {
        checks.running--
        // Every waiting check looks again: a success frees a place, a failure may end them all.
        const waiting = checks.waiting
        checks.waiting = []
        if (checks.running === 0 && waiting.length === 0) this.#checks.delete(address)
        for (const wake of waiting) wake()
      }
    }
  }
}

/** The window key of an address's failed sign-ins. */
function key(address: string): string {
  return `signin:${address}`
}

/** The wait a list of failures (oldest first) imposes at `now`. */
function waitOf(failures: number[], now: number): number {
  return failures.length >= MAX_FAILURES ? failures[failures.length - MAX_FAILURES]! + WINDOW_MS - now : 0
}
