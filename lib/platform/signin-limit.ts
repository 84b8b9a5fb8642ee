import { inWindow } from '../backend/backend.js'

/** CONTRACT §2: after this many failed sign-ins from one address within WINDOW_MS, sign-ins answer 429. */
const MAX_FAILURES = 10
const WINDOW_MS = 60_000
/** Password checks one address may have waiting for a place; past it they answer 429 at once. */
const MAX_WAITING = 100
/** Addresses with failures the backend would not take, past which the ones a minute old are swept. */
const MAX_UNRECORDED = 100_000

/**
 * What `acquire` answers: a place to check a password, or the milliseconds to wait (`busy` when
 * the address has too many checks waiting rather than too many failures).
 */
type Acquired = { ok: true; release: (failed: boolean, now: number) => Promise<void> } | { ok: false; waitMs: number; busy?: boolean }

/** How a waiting check is woken: null to look again, or the wait of a refusal. */
type Wake = (refusedMs: number | null) => void

/** Where the failures are kept: the game backend's event windows (Backend.eventWindow). */
export type FailureWindows = (key: string, now: number, windowMs: number, record?: { keep: number }) => Promise<number[]>

interface Checks {
  /** Checks holding a place. */
  running: number
  /** Checks waiting for one, oldest first. */
  waiting: Wake[]
  /** Checks reading the failures: the entry stays while any does. */
  reading: number
  /** Failures recorded by this instance's checks, ever: a read that saw this move may be stale. */
  failed: number
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
 * parallel all get in (up to 100 waiting per address): a success wakes the oldest check waiting,
 * a failure that limits the address refuses them all, any other failure takes its own place.
 * A failure the backend will not record (it reads but cannot write: a full disk) is kept here
 * for its minute and counted with the backend's, so the limit holds on this instance while the
 * sign-in answers the backend's error: without it, every guess would be checked. The clock is
 * passed in.
 */
export class SigninLimit {
  readonly #windows: FailureWindows
  readonly #checks = new Map<string, Checks>()
  /** Failures the backend refused to record, by address, oldest first, each kept for WINDOW_MS. */
  readonly #unrecorded = new Map<string, number[]>()

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
    let checks = this.#checks.get(address)
    if (checks === undefined) this.#checks.set(address, (checks = { running: 0, waiting: [], reading: 0, failed: 0 }))
    const entry = checks
    let woken = false
    entry.reading++
    try {
      for (;;) {
        const failedBefore = entry.failed
        const at = now()
        const failures = await this.#failures(address, at)
        // A failure this instance recorded while the read was on its way may be missing from it,
        // and its check no longer counts as running: read again rather than count it nowhere.
        if (entry.failed !== failedBefore) continue
        const waitMs = waitOf(failures, at)
        if (waitMs > 0) {
          wakeAll(entry, waitMs) // the others waiting would read the same
          return { ok: false, waitMs }
        }
        if (failures.length + entry.running < MAX_FAILURES) {
          entry.running++
          // Room for more (failures aged out, or several places freed): the next one looks too.
          if (failures.length + entry.running < MAX_FAILURES) entry.waiting.shift()?.(null)
          return { ok: true, release: this.#releaser(address, entry) }
        }
        if (!woken && entry.waiting.length >= MAX_WAITING) return { ok: false, waitMs: 1000, busy: true }
        // A check woken that found no place goes back to the front: it keeps its turn.
        const refusedMs = await new Promise<number | null>((resolve) => (woken ? entry.waiting.unshift(resolve) : entry.waiting.push(resolve)))
        if (refusedMs !== null) return { ok: false, waitMs: refusedMs }
        woken = true
      }
    } catch (err) {
      // The backend did not answer a woken check: the place it was woken for goes to the next.
      if (woken) entry.waiting.shift()?.(null)
      throw err
    } finally {
      // Also when the backend did not answer (503): nothing is held for this check then.
      entry.reading--
      this.#sweep(address, entry)
    }
  }

  /** Checks in flight from `address` and waiting for a place (for tests and the health of the map). */
  inFlight(address: string): { running: number; waiting: number } {
    const checks = this.#checks.get(address)
    return { running: checks?.running ?? 0, waiting: checks?.waiting.length ?? 0 }
  }

  /**
   * Count one failed sign-in from `address` at `now`; answers the failures in the window after it.
   * Throws the backend's error when it cannot record it, once the failure is kept here instead.
   */
  async fail(address: string, now: number): Promise<number[]> {
    try {
      return this.#withUnrecorded(address, now, await this.#windows(key(address), now, WINDOW_MS, { keep: MAX_FAILURES }))
    } catch (err) {
      this.#keepUnrecorded(address, now)
      throw err
    }
  }

  #failures(address: string, now: number): Promise<number[]> {
    const read = this.#windows(key(address), now, WINDOW_MS)
    // A failure kept while this read is on its way moves `failed`, and acquire reads again.
    return this.#unrecorded.has(address) ? read.then((recorded) => this.#withUnrecorded(address, now, recorded)) : read
  }

  /** The backend's failures of `address` and those it would not record, in order, within the minute. */
  #withUnrecorded(address: string, now: number, recorded: number[]): number[] {
    const kept = this.#unrecorded.get(address)
    if (kept === undefined) return recorded
    const live = kept.filter((time) => inWindow(time, now, WINDOW_MS))
    if (live.length === 0) this.#unrecorded.delete(address)
    else this.#unrecorded.set(address, live)
    return [...recorded, ...live].sort((a, b) => a - b)
  }

  #keepUnrecorded(address: string, now: number): void {
    if (this.#unrecorded.size >= MAX_UNRECORDED) {
      for (const [kept, times] of this.#unrecorded) if (times.at(-1)! <= now - WINDOW_MS) this.#unrecorded.delete(kept)
    }
    // Only the last MAX_FAILURES can limit the address (waitOf).
    this.#unrecorded.set(address, [...(this.#unrecorded.get(address) ?? []), now].slice(-MAX_FAILURES))
  }

  /** Drop an address's entry once no check holds, waits for or reads it. */
  #sweep(address: string, checks: Checks): void {
    if (checks.running === 0 && checks.waiting.length === 0 && checks.reading === 0 && this.#checks.get(address) === checks) this.#checks.delete(address)
  }

  #releaser(address: string, checks: Checks): (failed: boolean, now: number) => Promise<void> {
    let released = false
    return async (failed, now) => {
      if (released) return
      released = true
      let times: number[] | null = null
      try {
        // Recorded before the place is given back: a check waiting for it must see this failure.
        if (failed) {
          try {
            times = await this.fail(address, now)
          } finally {
            checks.failed++
          }
        }
      } finally {
        checks.running--
        const waitMs = times ? waitOf(times, now) : 0
        if (waitMs > 0) wakeAll(checks, waitMs) // the address is limited now: every waiting check is refused
        else if (times === null || checks.running === 0) checks.waiting.shift()?.(null) // a place is free: the oldest looks
        // A failure otherwise takes the place its check held: no one more may go.
        this.#sweep(address, checks)
      }
    }
  }
}

/** Wake every check waiting on `checks` with the refusal `waitMs`. */
function wakeAll(checks: Checks, waitMs: number): void {
  const waiting = checks.waiting
  checks.waiting = []
  for (const wake of waiting) wake(waitMs)
}

/** The window key of an address's failed sign-ins. */
function key(address: string): string {
  return `signin:${address}`
}

/**
 * The wait a list of failures (oldest first) imposes at `now`: until the window has passed over
 * the oldest of the last ten. One stamped a little ahead (another instance's clock) holds a little
 * longer, and Retry-After says so; the backends drop those more than the window ahead.
 */
function waitOf(failures: number[], now: number): number {
  return failures.length >= MAX_FAILURES ? failures[failures.length - MAX_FAILURES]! + WINDOW_MS - now : 0
}
