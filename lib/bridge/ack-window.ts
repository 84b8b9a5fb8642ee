/** The least an acking client may have unrendered (characters). */
export const ACK_WINDOW_MIN = 16 * 1024
/** Where its window starts, before the client's pace is known. */
export const ACK_WINDOW_START = 32 * 1024
/** The most (CONTRACT §6's "e.g. 1 MiB"). */
export const ACK_WINDOW_MAX = 1024 * 1024
/** The window holds about this much of the client's own pace of rendering. */
const WINDOW_SECONDS = 0.5
/** The PTY reads again once the unacknowledged output is below this share of the window. */
export const ACK_RESUME = 0.75
/** The pace is measured over acks this far apart at least. */
const SAMPLE_MS = 500

/**
 * The ack window of one connection (CONTRACT §6): how many output characters a client that acks
 * may have unrendered before the PTY is paused. A fixed 1 MiB took 8-46 s to drain after a Ctrl-C
 * on a 1 Mbit/s or 256 kbit/s link (a slow-network audit), so the window is sized to about half a
 * second of what the client has been acknowledging, as TCP's BBR sizes its window from the
 * delivery rate, between ACK_WINDOW_MIN and ACK_WINDOW_MAX: Ctrl-C in a flood then brings the
 * prompt back within about that, however slow the link or the browser. It starts small and grows
 * within a sample on a fast client (a page on loopback reaches the maximum in half a second).
 *
 * The PTY reads again below three quarters of the window, not half: through a 1 Mbit/s link with
 * 150 or 300 ms round trips, what was still unacknowledged at half (on the wire, being drawn, or
 * acked on the way back) ran out before new output reached the link, which idled, and the window,
 * sized from the pace it let through, settled at its least (a flood ran 15-30 % slower). A round
 * trip much over a third of a second still costs throughput (bench/README.md, slow link). On a
 * link too slow for half a second of it to reach the least, the least is the window: 16 KiB
 * brings the prompt back 1.2 s after a Ctrl-C at 256 kbit/s, where 32 KiB took 1.6-2.1 s. The
 * window still starts at 32 KiB: from 16 KiB, a page 300 ms away on a 10 Mbit/s link got 0.6 of
 * the link, not 0.7, the window growing from its start more slowly than the flood lasted.
 */
export class AckWindow {
  /** Characters the client may have unacknowledged now. */
  size = ACK_WINDOW_START
  /** When the current sample began (ms, monotonic), or -1 before the first ack. */
  #sampleStart = -1
  /** Characters acknowledged when it began. */
  #sampleAcked = 0
  /** The window held output back during this sample: it measured the client, not the shell. */
  #limited = false

  /** The window is holding output back now. */
  held(): void {
    this.#limited = true
  }

  /** An ack brought the characters acknowledged to `acked` (since the shell started) at `now`. */
  acked(acked: number, now: number): void {
    if (this.#sampleStart < 0) return this.#begin(acked, now)
    const elapsed = now - this.#sampleStart
    if (elapsed < SAMPLE_MS) return
    const paced = ((acked - this.#sampleAcked) / elapsed) * 1000 * WINDOW_SECONDS
    const fit = Math.min(ACK_WINDOW_MAX, Math.max(ACK_WINDOW_MIN, Math.round(paced)))
    // A sample the window did not limit measured how fast the shell wrote: it may only widen it.
    this.size = this.#limited ? fit : Math.max(this.size, fit)
    this.#begin(acked, now)
  }

  /** A new shell on the connection: its characters count from 0; the client's pace is kept. */
  restart(): void {
    this.#sampleStart = -1
    this.#limited = false
  }

  #begin(acked: number, now: number): void {
    this.#sampleStart = now
    this.#sampleAcked = acked
    this.#limited = false
  }
}
