import type { WebSocket, RawData } from 'ws'
import type { TicketClaims } from '../ticket.js'
import { ACK_RESUME, AckWindow } from './ack-window.js'
import { parseFrame, type ClientFrame, type ServerFrame } from './protocol.js'
import type { Registry } from './registry.js'
import type { Terminal } from './terminal.js'
import { messageOf } from '../log.js'

/**
 * Pause the PTY while the socket holds more than this unsent, resume below the low mark. Output
 * that waits here lives long enough for V8 to promote it, and is then held until a full
 * collection: with 1 MiB allowed to wait, a client reading 5 MB/s without acks grew the bridge by
 * 20 MiB in 5 s. The kernel's send buffer, megabytes on loopback, keeps a fast client fed.
 */
const HIGH_WATER = 256 * 1024
const LOW_WATER = 64 * 1024
/**
 * Input waiting for a shell that does not read (a program in raw mode that never reads its
 * input) is held up to this much; input frames past it are refused with an `error` frame. The
 * socket itself is never paused for input: a paused socket reads no `kill` frame and notices no
 * close, so the shell, its jobs and the connection's place would outlive the client.
 */
const INPUT_HIGH = 1024 * 1024
/** Error frames queued for a client that is not reading; more are dropped (see `send`). */
const MAX_QUEUED_ERRORS = 256

/**
 * CONTRACT §6: the one JSON line logged for every connection when it ends (pid null without a
 * PTY), with exactly the fields the contract names: the log writes it without adding `time`.
 */
export function sessionLine(
  claims: TicketClaims,
  { pid, startedAt, bytesIn, bytesOut }: { pid: number | null; startedAt: string; bytesIn: number; bytesOut: number },
): Record<string, unknown> {
  return { event: 'terminal.session', user: claims.username, pid, startedAt, endedAt: new Date().toISOString(), bytesIn, bytesOut }
}

/** What a connection uses of its bridge. */
interface ConnectionServices {
  registry: Registry
  /** The bridge's event log. */
  log: (entry: Record<string, unknown>) => void
  /** Where the `terminal.session` line goes (written as it is, CONTRACT §6). */
  sessionLog: (entry: Record<string, unknown>) => void
  /**
   * Called each time a frame that had to wait for room in the kernel's send buffer has left for
   * the network: room that only the client's acknowledgements make. It is the heartbeat's sign
   * that a client whose ping waits behind output is still taking that output.
   */
  took: () => void
}

/**
 * One WebSocket connection: frames in, frames out, at most one live PTY, flow control, and the
 * `terminal.session` log line when it ends. Resolves once its shell session, if any, is ended.
 */
export function serveConnection(ws: WebSocket, claims: TicketClaims, { registry, log, sessionLog, took }: ConnectionServices): Promise<void> {
  const startedAt = new Date().toISOString()
  let terminal: Terminal | null = null
  let pid: number | null = null
  let bytesIn = 0
  let bytesOut = 0
  let sentChars = 0
  let ackedChars = 0
  let acking = false
  /** The shell has ended: its last output is not held to the ack window (Terminal's `ended`). */
  let windowOff = false
  const ackWindow = new AckWindow()

  // Error frames the kernel did not take at once. A client that sends bad frames and never reads
  // the answers had them all queued, each small write costing far more memory than its bytes
  // (100,000 held 67 MiB): past MAX_QUEUED_ERRORS, further error frames are dropped until some go
  // out. One the kernel takes is not counted, though its callback comes later: a client that
  // reads gets an error frame for each bad frame of a burst.
  let queuedErrors = 0
  // Set when a send leaves bytes queued (the kernel's buffer was full), cleared once the queue is
  // empty again. A write the kernel takes at once proves nothing about the client, even on a dead
  // path, until its buffer fills; a queued one that completes later does. Whether anything is
  // still queued at the heartbeat does not matter: one completion may take the whole queue.
  let backlog = false
  const frameSent = (): void => {
    if (backlog) {
      took()
      backlog = ws.bufferedAmount > 0
    }
    updateFlow()
  }
  const send = (frame: ServerFrame): void => {
    if (ws.readyState !== ws.OPEN) return
    const error = frame.type === 'error'
    if (error && queuedErrors >= MAX_QUEUED_ERRORS) return
    let queuedError = false
    ws.send(JSON.stringify(frame), error ? () => {
      if (queuedError) queuedErrors--
      frameSent()
    } : frameSent)
    if (ws.bufferedAmount > 0) {
      backlog = true
      if (error) {
        queuedError = true
        queuedErrors++
      }
    }
  }

  // Called after every send completes and on every ack: the PTY reads only while both the socket
  // and, for a client that acks, the page keep up.
  function updateFlow(): void {
    if (!terminal) return
    const unacked = acking && !windowOff ? sentChars - ackedChars : 0
    if (unacked > ackWindow.size) ackWindow.held()
    if (ws.bufferedAmount > HIGH_WATER || unacked > ackWindow.size) terminal.pause()
    else if (ws.bufferedAmount < LOW_WATER && unacked < ackWindow.size * ACK_RESUME) terminal.resume()
  }

  function create(cols: number, rows: number): void {
    if (terminal) return send({ type: 'error', message: 'a terminal is already running on this connection' })
    try {
      const spawned: Terminal = registry.spawn(cols, rows, {
        output(data, bytes) {
          sentChars += data.length
          bytesOut += bytes
          send({ type: 'output', data })
          updateFlow()
        },
        // What is left in the PTY once the session has ended is at most the kernel's buffer (12–19
        // KB measured) and one read, unless a process that left the terminal still writes to it:
        // the send buffer's marks bound that; the window would only keep the PTY's descriptor open,
        // and `exit` unsent, until a client that stopped acking acks again (CONTRACT §6: a kill or
        // an exit frees them).
        ended() {
          if (terminal !== spawned) return
          windowOff = true
          updateFlow()
        },
        exit(code, signal) {
          if (terminal === spawned) terminal = null
          send({ type: 'exit', code, signal })
        },
      })
      terminal = spawned
      pid = spawned.pid
      sentChars = ackedChars = 0
      windowOff = false
      ackWindow.restart()
      // The session line names only the last shell of a connection (New shell starts another):
      // each start is logged too, so every shell the bridge ran has its user, pid and time.
      log({ event: 'terminal.shell', user: claims.username, pid: spawned.pid })
      send({ type: 'created', pid: spawned.pid })
    } catch (err) {
      log({ event: 'terminal.spawn_failed', user: claims.username, error: messageOf(err) })
      send({ type: 'error', message: 'the shell could not be started' })
    }
  }

  function handle(frame: ClientFrame): void {
    if (frame.type === 'create') return create(frame.cols ?? 80, frame.rows ?? 24)
    if (frame.type === 'ack') {
      acking = true
      ackedChars = Math.min(sentChars, ackedChars + frame.bytes)
      ackWindow.acked(ackedChars, performance.now())
      return updateFlow()
    }
    if (!terminal) return send({ type: 'error', message: `no terminal: send create before ${frame.type}` })
    if (frame.type === 'input') {
      if (terminal.pendingInput > INPUT_HIGH) {
        return send({ type: 'error', message: `input refused: the shell has not read the ${terminal.pendingInput} bytes before it yet` })
      }
      bytesIn += Buffer.byteLength(frame.data)
      terminal.write(frame.data)
    } else if (frame.type === 'resize') {
      terminal.resize(frame.cols, frame.rows)
    } else {
      void terminal.end()
    }
  }

  ws.on('message', (data: RawData, isBinary: boolean) => {
    if (isBinary) return send({ type: 'error', message: 'binary frames are not accepted; send JSON text' })
    const parsed = parseFrame(data.toString())
    if ('error' in parsed) return send({ type: 'error', message: parsed.error })
    handle(parsed.frame)
  })

  return new Promise((resolve) => {
    ws.once('close', () => {
      const ending = terminal ? registry.dispose(terminal) : Promise.resolve()
      terminal = null
      sessionLog(sessionLine(claims, { pid, startedAt, bytesIn, bytesOut }))
      void ending.then(resolve)
    })
  })
}
