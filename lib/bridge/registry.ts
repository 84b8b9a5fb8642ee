import type { ShellAccount } from './account.js'
import { removeCgroup } from './cgroup.js'
import type { Containment } from './containment.js'
import { Terminal, type TerminalEvents } from './terminal.js'

/** The live PTYs of this bridge: spawn them, and end them all at shutdown. */
export class Registry {
  readonly #terminals = new Set<Terminal>()
  /**
   * Sessions still being ended after their shell left the registry (it exited, or its client is
   * gone): their jobs that ignore SIGHUP wait up to 2 s for the SIGKILL, which a bridge exiting
   * meanwhile would never send (CONTRACT §6: SIGTERM ends every shell, its jobs included).
   */
  readonly #ending = new Set<Promise<void>>()
  readonly #account: ShellAccount
  readonly #shell: string
  readonly #containment: Containment | null
  /** Set by disposeAll: the bridge is stopping, and no shell starts any more. */
  #closed = false

  constructor(account: ShellAccount, shell: string, containment: Containment | null = null) {
    this.#account = account
    this.#shell = shell
    this.#containment = containment
  }

  /** Spawn a login shell, in a cgroup of its own with containment; it leaves the registry when it exits or is disposed. */
  spawn(cols: number, rows: number, events: TerminalEvents): Terminal {
    if (this.#closed) throw new Error('the bridge is stopping')
    // The cgroups of the shells running now, which a full tree's clearing must leave alone (asked only then).
    const cgroup = this.#containment ? this.#containment.create(() => new Set([...this.#terminals].map((t) => t.cgroup!))) : null
    if (this.#containment && cgroup === null) throw new Error('no cgroup for the terminal')
    let terminal: Terminal
    try {
      terminal = new Terminal(this.#account, this.#shell, cols, rows, {
        output: events.output,
        ended: events.ended,
        exit: (code, signal) => {
          this.#terminals.delete(terminal)
          this.#track(terminal.end())
          events.exit(code, signal)
        },
      }, cgroup)
    } catch (err) {
      if (cgroup !== null) removeCgroup(cgroup)
      throw err
    }
    this.#terminals.add(terminal)
    return terminal
  }

  /** Dispose of one terminal (its client is gone) and forget it. */
  dispose(terminal: Terminal): Promise<void> {
    this.#terminals.delete(terminal)
    return this.#track(terminal.dispose())
  }

  /** Dispose of every terminal; resolves when every session is ended, those ending already included. */
  async disposeAll(): Promise<void> {
    this.#closed = true
    for (const terminal of this.#terminals) void this.dispose(terminal)
    await Promise.all(this.#ending)
  }

  /** Hold `ending` until it settles, for disposeAll. */
  #track(ending: Promise<void>): Promise<void> {
    this.#ending.add(ending)
    void ending.then(() => this.#ending.delete(ending))
    return ending
  }
}
