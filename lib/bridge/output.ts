import { StringDecoder } from 'node:string_decoder'

/**
 * A frame carries at most this many bytes of PTY output (a read is at most 64 KiB, Node's read
 * size; a character split between reads goes whole into the later frame).
 */
const MAX_FRAME_BYTES = 64 * 1024
/** Output is a stream once this much has come without a pause of STREAM_GAP_MS; then it is batched for BATCH_MS. */
const STREAM_BYTES = 16 * 1024
const STREAM_GAP_MS = 5
const BATCH_MS = 3
/**
 * A read this small with nothing pending is a keystroke's echo: sent from the read itself, it
 * skips a turn of the event loop (about 25 µs of the echo round trip on the development machine).
 */
const ECHO_BYTES = 64

/**
 * PTY bytes in, `output` frame texts out. A PTY read is small (about 1.3 KB on average under a
 * flood) and usually one per turn of the event loop, so reads are collected and decoded once per
 * frame. An echo (a read of at most ECHO_BYTES with nothing pending) is sent at once; other
 * output goes out at the end of the turn (setImmediate), so it waits for no timer; once more
 * than STREAM_BYTES have come without a pause it is a flood, batched for BATCH_MS or up to
 * 64 KiB, which cuts frames, syscalls and the client's work per byte.
 * The streaming decoder keeps multi-byte characters whole across frames (decoding each read
 * alone turns a split character into U+FFFD).
 */
export class OutputBatcher {
  readonly #decoder = new StringDecoder('utf8')
  readonly #send: (data: string, bytes: number) => void
  #chunks: Buffer[] = []
  #bytes = 0
  /** The pending flush: an immediate, or under a flood a timer. Each is cancelled by its own function. */
  #scheduled: { immediate: NodeJS.Immediate } | { timer: NodeJS.Timeout } | null = null
  #lastFlush = 0
  /** Bytes sent since output last paused for STREAM_GAP_MS. */
  #run = 0

  /** `send` gets each frame's text and how many PTY bytes it carries (for the session log). */
  constructor(send: (data: string, bytes: number) => void) {
    this.#send = send
  }

  /** Take one read from the PTY. */
  push(chunk: Buffer): void {
    // What is pending goes first when this read would take the frame past the cap.
    if (this.#bytes > 0 && this.#bytes + chunk.length > MAX_FRAME_BYTES) this.flush()
    this.#chunks.push(chunk)
    this.#bytes += chunk.length
    if (this.#bytes >= MAX_FRAME_BYTES || (this.#scheduled === null && this.#bytes <= ECHO_BYTES && this.#run < STREAM_BYTES)) this.flush()
    else if (this.#scheduled === null) {
      const streaming = this.#run >= STREAM_BYTES && performance.now() - this.#lastFlush < STREAM_GAP_MS
      this.#scheduled = streaming ? { timer: setTimeout(() => this.flush(), BATCH_MS) } : { immediate: setImmediate(() => this.flush()) }
    }
  }

  /** Send what is pending now. */
  flush(): void {
    // clearImmediate on a Timeout is not harmless: Node counts it as a cancelled immediate, and
    // from then on immediates wait for some other event to run (the session log line went unwritten).
    if (this.#scheduled !== null) {
      if ('timer' in this.#scheduled) clearTimeout(this.#scheduled.timer)
      else clearImmediate(this.#scheduled.immediate)
    }
    this.#scheduled = null
    if (this.#bytes === 0) return
    const now = performance.now()
    if (now - this.#lastFlush >= STREAM_GAP_MS) this.#run = 0
    this.#run += this.#bytes
    this.#lastFlush = now
    const bytes = this.#bytes
    const joined = this.#chunks.length === 1 ? this.#chunks[0]! : Buffer.concat(this.#chunks, bytes)
    this.#chunks = []
    this.#bytes = 0
    this.#emit(this.#decoder.write(joined), bytes)
  }

  /** The stream is over: a trailing partial character becomes U+FFFD, then everything is sent. */
  end(): void {
    this.flush()
    this.#emit(this.#decoder.end(), 0)
  }

  #emit(data: string, bytes: number): void {
    let at = 0
    while (at < data.length) {
      let end = Math.min(at + MAX_FRAME_BYTES, data.length)
      // Keep a surrogate pair in one frame.
      if (end < data.length && /[\uD800-\uDBFF]/.test(data[end - 1]!)) end--
      this.#send(data.slice(at, end), bytes)
      bytes = 0
      at = end
    }
  }
}
