import type { ShellAccount } from './account.js'
import { Terminal, type TerminalEvents } from './terminal.js'

/** The live PTYs of this bridge, by pid: spawn, count, and end them all at shutdown. */
export class Registry {
  readonly #terminals = new Map<number, Terminal>()
  readonly #account: ShellAccount
  readonly #shell: string
  /** Set by disposeAll: the bridge is stopping, and no shell starts any more. */
  #closed = false

  constructor(account: ShellAccount, shell: string) {
    this.#account = account
    this.#shell = shell
  }

  /** Spawn a login shell; it leaves the registry when it exits or is disposed. */
  spawn(cols: number, rows: number, events: TerminalEvents): Terminal {
    if (this.#closed) throw new Error('the bridge is stopping')
    const terminal: Terminal = new Terminal(this.#account, this.#shell, cols, rows, {
      output: events.output,
      exit: (code, signal) => {
        this.#terminals.delete(terminal.pid)
        events.exit(code, signal)
      },
    })
    this.#terminals.set(terminal.pid, terminal)
    return terminal
  }

  /** Dispose of one terminal (its client is gone) and forget it. */
  dispose(terminal: Terminal): Promise<void> {
    this.#terminals.delete(terminal.pid)
    return terminal.dispose()
  }

  /** Live PTYs now. */
  get size(): number {
    return this.#terminals.size
  }

  /** Dispose of every terminal; resolves when every session is ended. */
  async disposeAll(): Promise<void> {
    this.#closed = true
    await Promise.all([...this.#terminals.values()].map((terminal) => this.dispose(terminal)))
  }
}
