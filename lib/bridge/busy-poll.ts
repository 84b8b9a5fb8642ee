/** Polling stops for the rest of a second once it has taken this much of it: at most half a core. */
export const BUSY_POLL_BUDGET_MS = 500

/**
 * Busy polling after input. When the event loop has nothing to do it sleeps in epoll_wait, and
 * the next byte from the client or from the PTY has to wake the process: on a virtual machine
 * whose idle vCPUs halt, that wake-up (an inter-processor interrupt, a VM exit, the host
 * scheduling the vCPU again) is most of a keystroke's round trip. For `windowMs` after each input
 * frame the loop instead keeps turning through setImmediate, so epoll is asked with a zero
 * timeout and the echo, and the next frame of a quick exchange, are picked up without a
 * wake-up. Nothing waits on it: every turn still runs timers and serves every connection.
 * It costs CPU: up to `windowMs` per input frame, and never more than `budgetMs` in a second.
 */
export class BusyPoll {
  readonly #windowMs: number
  readonly #budgetMs: number
  #until = 0
  #polling = false
  /** When the current second of the budget began, what was spent in it, and the last turn. */
  #secondAt = 0
  #spent = 0
  #lastTurn = 0

  /** `windowMs` 0 turns busy polling off. */
  constructor(windowMs: number, budgetMs = BUSY_POLL_BUDGET_MS) {
    this.#windowMs = windowMs
    this.#budgetMs = budgetMs
  }

  /** True while the loop is kept turning. */
  get polling(): boolean {
    return this.#polling
  }

  /** Input came: keep the loop polling for the window from now (within the budget). */
  touch(): void {
    if (this.#windowMs <= 0) return
    const now = performance.now()
    this.#until = now + this.#windowMs
    if (this.#polling || !this.#withinBudget(now)) return
    this.#polling = true
    this.#lastTurn = now
    setImmediate(this.#turn)
  }

  /** Start a new second of the budget when the last one is over; true while some of it is left. */
  #withinBudget(now: number): boolean {
    if (now - this.#secondAt >= 1000) {
      this.#secondAt = now
      this.#spent = 0
    }
    return this.#spent < this.#budgetMs
  }

  readonly #turn = (): void => {
    const now = performance.now()
    this.#spent += now - this.#lastTurn
    this.#lastTurn = now
    if (now < this.#until && this.#withinBudget(now)) setImmediate(this.#turn)
    else this.#polling = false
  }
}
