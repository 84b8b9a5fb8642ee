import { StringDecoder } from 'node:string_decoder'

/** A frame never carries more than this many characters; larger bursts are split. */
export const MAX_FRAME_CHARS = 64 * 1024

/**
 * PTY bytes in, `output` frame texts out. A streaming decoder keeps multi-byte characters whole
 * across reads (decoding each read alone turns a split character into U+FFFD). Everything read in
 * one turn of the event loop goes out as one frame (setImmediate), so an echo waits no timer and a
 * flood is sent in 64 KiB frames instead of one frame per read.
 */
export class OutputBatcher {
  readonly #decoder = new StringDecoder('utf8')
  readonly #send: (data: string, bytes: number) => void
  #pending: string[] = []
  #size = 0
  #bytes = 0
  #scheduled: NodeJS.Immediate | null = null

  /** `send` gets each frame's text and how many PTY bytes it carries (for the session log). */
  constructor(send: (data: string, bytes: number) => void) {
    this.#send = send
  }

  /** Take one read from the PTY. */
  push(chunk: Buffer): void {
    this.#bytes += chunk.length
    this.#add(this.#decoder.write(chunk))
    if (this.#size >= MAX_FRAME_CHARS) this.flush()
    else if (this.#size > 0 && this.#scheduled === null) this.#scheduled = setImmediate(() => this.flush())
  }

  /** Send what is pending now. */
  flush(): void {
    if (this.#scheduled !== null) clearImmediate(this.#scheduled)
    this.#scheduled = null
    if (this.#size === 0) return
    const data = this.#pending.join('')
    let bytes = this.#bytes
    this.#pending = []
    this.#size = 0
    this.#bytes = 0
    let at = 0
    while (at < data.length) {
      let end = Math.min(at + MAX_FRAME_CHARS, data.length)
      // Keep a surrogate pair in one frame.
      if (end < data.length && /[\uD800-\uDBFF]/.test(data[end - 1]!)) end--
      this.#send(data.slice(at, end), bytes)
      bytes = 0
      at = end
    }
  }

  /** The stream is over: a trailing partial character becomes U+FFFD, then everything is sent. */
  end(): void {
    this.#add(this.#decoder.end())
    this.flush()
  }

  #add(text: string): void {
    if (text === '') return
    this.#pending.push(text)
    this.#size += text.length
  }
}
