import { writeSync } from 'node:fs'

/** While the shell does not read, retry this often (node-pty retries on every loop turn). */
const RETRY_MS = 5

/**
 * Keystrokes to the PTY master. node-pty writes through the thread pool (fs.write), one hop
 * each way per keystroke; the master is non-blocking, so a direct write either lands at once or
 * fails with EAGAIN, and only then are bytes queued and retried, in order.
 */
export class PtyWriter {
  readonly #fd: number
  #queue: Buffer[] = []
  #pending = 0
  #timer: NodeJS.Timeout | null = null

  constructor(fd: number) {
    this.#fd = fd
  }

  /** Bytes queued because the shell is not reading. */
  get pending(): number {
    return this.#pending
  }

  write(data: string): void {
    const bytes = Buffer.from(data)
    if (bytes.length === 0) return
    this.#queue.push(bytes)
    this.#pending += bytes.length
    if (this.#queue.length === 1) this.#flush()
  }

  /** Drop what is queued (the shell is gone). */
  dispose(): void {
    if (this.#timer) clearTimeout(this.#timer)
    this.#timer = null
    this.#queue = []
    this.#pending = 0
  }

  #flush(): void {
    this.#timer = null
    while (this.#queue.length > 0) {
      const head = this.#queue[0]!
      let written: number
      try {
        written = writeSync(this.#fd, head)
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') return this.dispose() // EIO: the shell is gone
        written = 0
      }
      this.#pending -= written
      if (written < head.length) {
        this.#queue[0] = head.subarray(written)
        this.#timer = setTimeout(() => this.#flush(), RETRY_MS)
        return
      }
      this.#queue.shift()
    }
  }
}
