/** CONTRACT §2: after this many failed sign-ins from one address within WINDOW_MS, sign-ins answer 429. */
const MAX_FAILURES = 10
const WINDOW_MS = 60_000
/** Addresses tracked at most; past it the oldest entry goes (an attacker cycling addresses costs bounded memory). */
const MAX_ADDRESSES = 100_000

/**
 * Failed sign-ins per client address in a sliding minute, kept in this process's memory: a
 * restart forgets them, and each platform instance counts its own. The first 10 failures answer
 * 401; from then every sign-in (guest, register, login) answers 429 until the oldest of those 10
 * is a minute old. A password check counts as a failure from the moment it begins until it is
 * known to have succeeded: a check takes a while (scrypt), and counting only finished failures
 * let guesses sent in parallel all pass the limit. Pure apart from its map: the clock is passed in.
 */
export class SigninLimit {
  readonly #failures = new Map<string, number[]>()

  /** Milliseconds `address` must wait before signing in, 0 when it may try now. */
  waitMs(address: string, now: number): number {
    const recent = this.#recent(address, now)
    return recent.length >= MAX_FAILURES ? recent[recent.length - MAX_FAILURES]! + WINDOW_MS - now : 0
  }

  /**
   * Begin a password check from `address` at `now`: 0 when it may go ahead, counted as a failure
   * until release() takes it back, else the milliseconds to wait (nothing is counted then).
   */
  begin(address: string, now: number): number {
    const wait = this.waitMs(address, now)
    if (wait === 0) this.fail(address, now)
    return wait
  }

  /** The check begun at `startedAt` did not fail on its credentials: it no longer counts. */
  release(address: string, startedAt: number): void {
    const list = this.#failures.get(address)
    const at = list?.indexOf(startedAt) ?? -1
    if (at < 0) return
    list!.splice(at, 1)
    if (list!.length === 0) this.#failures.delete(address)
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
