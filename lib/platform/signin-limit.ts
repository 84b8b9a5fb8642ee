/** CONTRACT §2: after this many failed sign-ins from one address within WINDOW_MS, sign-ins answer 429. */
const MAX_FAILURES = 10
const WINDOW_MS = 60_000
/** Addresses tracked at most; past it the oldest entry goes (an attacker cycling addresses costs bounded memory). */
const MAX_ADDRESSES = 100_000
/** Password checks one address may have waiting for a place; past it they answer 429 at once. */
const MAX_WAITING = 100

/** What `acquire` answers: a place to check a password, or the milliseconds to wait for a sign-in. */
export type Acquired = { ok: true; release: (failed: boolean, now: number) => void } | { ok: false; waitMs: number }

interface Checks {
  running: number
  waiting: (() => void)[]
}

/**
 * Failed sign-ins per client address in a sliding minute, kept in this process's memory: a
 * restart forgets them, and each platform instance counts its own. The first 10 failures answer
 * 401; from then every sign-in (guest, register, login) answers 429 until the oldest of those 10
 * is a minute old.
 *
 * A password check takes a while (scrypt), so an address's checks in flight are held to the
 * failures it has left: with 7 failures in the minute, 3 checks run at once and any more wait for
 * one of them to end. Guesses sent in parallel cannot pass the limit (of 30 wrong ones, 10 are
 * checked and 20 answer 429 once those 10 have failed), and right passwords sent in parallel all
 * get in, however many. Pure apart from its maps: the clock is passed in.
 */
export class SigninLimit {
  readonly #failures = new Map<string, number[]>()
  readonly #checks = new Map<string, Checks>()

  /** Milliseconds `address` must wait before signing in, 0 when it may try now. */
  waitMs(address: string, now: number): number {
    const recent = this.#recent(address, now)
    return recent.length >= MAX_FAILURES ? recent[recent.length - MAX_FAILURES]! + WINDOW_MS - now : 0
  }

  /**
   * A place to check a password from `address`: at once when its failures and checks in flight
   * leave one, else after a check in flight ends. Answers a wait instead once the address is
   * limited (or too many checks are waiting). The holder must call `release` exactly once.
   */
  async acquire(address: string, now: () => number): Promise<Acquired> {
    for (;;) {
      const waitMs = this.waitMs(address, now())
      let checks = this.#checks.get(address)
      if (waitMs > 0) return this.#refuse(address, checks, waitMs)
      if (checks === undefined) this.#checks.set(address, (checks = { running: 0, waiting: [] }))
      if (this.#recent(address, now()).length + checks.running < MAX_FAILURES) {
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

  #refuse(address: string, checks: Checks | undefined, waitMs: number): Acquired {
    if (checks && checks.running === 0 && checks.waiting.length === 0) this.#checks.delete(address)
    return { ok: false, waitMs }
  }

  /** Count one failed sign-in from `address` at `now`. */
  fail(address: string, now: number): void {
    const recent = this.#recent(address, now)
    recent.push(now)
    // Only the last MAX_FAILURES matter for the wait.
    if (recent.length > MAX_FAILURES) recent.splice(0, recent.length - MAX_FAILURES)
    this.#failures.delete(address)
    this.#failures.set(address, recent)
    if (this.#failures.size > MAX_ADDRESSES) this.#failures.delete(this.#failures.keys().next().value!)
  }

  #releaser(address: string, checks: Checks): (failed: boolean, now: number) => void {
    let released = false
    return (failed, now) => {
      if (released) return
      released = true
      if (failed) this.fail(address, now)
      checks.running--
      // Every waiting check looks again: a success frees a place, a failure may end them all.
      const waiting = checks.waiting
      checks.waiting = []
      if (checks.running === 0 && waiting.length === 0) this.#checks.delete(address)
      for (const wake of waiting) wake()
    }
  }

  /** The failures of `address` younger than WINDOW_MS; drops the entry when none are left. */
  #recent(address: string, now: number): number[] {
    const list = this.#failures.get(address)
    if (!list) return []
    const recent = list.filter((time) => time > now - WINDOW_MS)
    if (recent.length === 0) this.#failures.delete(address)
    else this.#failures.set(address, recent)
    return recent
  }
}
