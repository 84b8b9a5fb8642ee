import { readSync } from 'node:fs'
import type { ReadStream } from 'node:tty'
import { spawn, type IPty } from 'node-pty'
import { shellCommand, type ShellAccount } from './account.js'
import { OutputBatcher } from './output.js'
import { PtyWriter } from './pty-writer.js'
import { endSession, KILL_GRACE_MS } from './session-kill.js'

/** What a terminal reports: coalesced output, then, after the last byte of it, the exit. */
export interface TerminalEvents {
  /** A frame's text, and the PTY bytes it carries. */
  output(data: string, bytes: number): void
  /**
   * The shell and its session are gone: a client's ack window need hold the PTY no longer (what
   * is left is the shell's last output, sent ahead of `exit`); the socket's own marks still do.
   */
  ended(): void
  exit(code: number, signal: number | null): void
}

/** PATH of the clean environment; the login shell's profile may extend it. */
const SHELL_PATH = '/usr/local/bin:/usr/bin:/bin:/usr/local/games:/usr/games'
/** Once the shell is gone, give a descriptor-holding straggler this long before the master is closed anyway. */
const STRAGGLER_MS = KILL_GRACE_MS + 1_000

/** The internals of node-pty 1.1.0 (pinned exactly in package.json) this module has to reach. */
interface PtyInternals {
  _socket: ReadStream
  _fd: number
}

/**
 * One login shell on a PTY. node-pty spawns it; this class owns the end of its output, because
 * node-pty loses it two ways: libuv takes POLLHUP after a short read as end of file while bytes
 * are still queued in the master, and node-pty destroys its read stream 200 ms after the shell
 * exits even when that stream is paused for flow control. Both would drop the tail of a fast
 * command's output, so at end of file the master is read dry with readSync, and node-pty's
 * destroy is held back until that has happened.
 */
export class Terminal {
  readonly pid: number
  readonly #pty: IPty
  readonly #socket: ReadStream
  readonly #fd: number
  readonly #realDestroy: (error?: Error) => ReadStream
  readonly #batcher: OutputBatcher
  readonly #writer: PtyWriter
  readonly #events: TerminalEvents
  #drained = false
  /** The master is closed: its descriptor number may already belong to something else. */
  #closed = false
  #disposed = false
  #exited = false
  #paused = false
  #straggler: NodeJS.Timeout | null = null
  #ending: Promise<void> | null = null
  /** The terminal's own cgroup (containment.ts), or null when the bridge runs without containment. */
  readonly cgroup: string | null

  constructor(account: ShellAccount, shell: string, cols: number, rows: number, events: TerminalEvents, cgroup: string | null = null) {
    const { file, args } = shellCommand(shell, cgroup)
    this.cgroup = cgroup
    this.#events = events
    this.#batcher = new OutputBatcher((data, bytes) => this.#disposed || events.output(data, bytes))
    // The clean environment of CONTRACT §6; nothing of the bridge's own reaches the shell.
    const env = { HOME: account.home, USER: account.username, LOGNAME: account.username, SHELL: shell, PATH: SHELL_PATH, TERM: 'xterm-256color', LANG: 'C.UTF-8' }
    this.#pty = spawn(file, args, { name: 'xterm-256color', cols, rows, cwd: account.home, env, encoding: null })
    this.pid = this.#pty.pid
    const internals = this.#pty as unknown as PtyInternals
    this.#socket = internals._socket
    this.#fd = internals._fd
    this.#writer = new PtyWriter(this.#fd)
    this.#realDestroy = this.#socket.destroy.bind(this.#socket)
    this.#socket.destroy = (error?: Error) => this.#socketOnDestroy(error)
    this.#socket.prependListener('end', () => this.#drain())
    this.#pty.onData((chunk) => this.#batcher.push(chunk as unknown as Buffer))
    this.#pty.onExit(({ exitCode, signal }) => this.#ptyOnExit(exitCode, signal))
  }

  /** Write keystrokes (queued while the shell does not read them). */
  write(data: string): void {
    if (this.#exited || this.#closed) return
    this.#writer.write(data)
  }

  /** Bytes of input still waiting for the shell to read them. */
  get pendingInput(): number {
    return this.#writer.pending
  }

  /** Resize the PTY (the shell gets SIGWINCH). */
  resize(cols: number, rows: number): void {
    if (!this.#exited && !this.#closed) this.#pty.resize(cols, rows)
  }

  /** Stop reading the PTY: the shell blocks once the kernel's buffer is full. */
  pause(): void {
    if (this.#paused) return
    this.#paused = true
    this.#pty.pause()
  }

  /** Read the PTY again. */
  resume(): void {
    if (!this.#paused) return
    this.#paused = false
    this.#pty.resume()
  }

  /** End the shell's whole session and cgroup (a `kill` frame); the exit follows through `events.exit`. */
  end(): Promise<void> {
    this.#ending ??= endSession(this.pid, KILL_GRACE_MS, this.cgroup)
    return this.#ending
  }

  /** The client is gone: end the session and close the master now, dropping unsent output. */
  dispose(): Promise<void> {
    if (!this.#disposed) {
      this.#disposed = true
      if (this.#straggler) clearInterval(this.#straggler)
      this.#pty.pause()
      this.#closeMaster()
    }
    return this.end()
  }

  /** End of file on the master: read what libuv left behind, until EIO (slave closed) or EAGAIN. */
  #drain(): void {
    if (this.#drained || this.#disposed) return
    this.#drained = true
    const buffer = Buffer.allocUnsafe(64 * 1024)
    for (;;) {
      let n: number
      try {
        n = readSync(this.#fd, buffer, 0, buffer.length, null)
      } catch {
        break
      }
      if (n === 0) break
      this.#batcher.push(Buffer.from(buffer.subarray(0, n)))
    }
  }

  /**
   * The read stream is destroyed at end of file (after #drain ran), on a read error, and by
   * node-pty 200 ms after the shell exited when the stream has not closed by itself: paused by
   * us, or held open by a job still writing. In the node-pty case the shell is gone: end its
   * session, which closes the slave, and let the stream reach its end of file when flow control
   * allows.
   */
  #socketOnDestroy(error?: Error): ReadStream {
    // A read error (EIO once the slave side is closed) ends the stream as end of file does.
    if (error) this.#drain()
    if (this.#drained || this.#disposed) return this.#closeMaster(error)
    void this.end().then(() => this.#closed || this.#events.ended())
    this.#straggler ??= setInterval(() => this.#closeStraggler(), STRAGGLER_MS)
    return this.#socket
  }

  /** A process outside the session keeps the slave open: give up on it once we are not paused. */
  #closeStraggler(): void {
    if (this.#paused) return
    clearInterval(this.#straggler!)
    this.#drain()
    this.#closeMaster()
  }

  /** Close the master; the writer stops first, so no retry writes to a descriptor number reused since. */
  #closeMaster(error?: Error): ReadStream {
    this.#closed = true
    this.#writer.dispose()
    return this.#realDestroy(error)
  }

  #ptyOnExit(exitCode: number, signal: number | undefined): void {
    this.#exited = true
    this.#writer.dispose()
    if (this.#straggler) clearInterval(this.#straggler)
    // Jobs that detached from the terminal (nohup with redirections) still belong to the session.
    void this.end()
    if (this.#disposed) return
    this.#batcher.end()
    this.#events.exit(exitCode, signal ? signal : null)
  }
}
