import type http from 'node:http'
import type { Socket } from 'node:net'

/** While closing, how often connections that have fallen idle are closed. */
const IDLE_SWEEP_MS = 100

/** Each tracked server's open connections. */
const connections = new WeakMap<http.Server, Set<Socket>>()

/**
 * Keep the server's open connections, so that closeGracefully can wait for the ones it cuts: a
 * socket's `close` (and with it the cut response's, whose access-log line says 499) comes a turn
 * of the event loop after the server's own `close`.
 */
export function trackConnections(server: http.Server): void {
  const open = new Set<Socket>()
  connections.set(server, open)
  server.on('connection', (socket: Socket) => {
    open.add(socket)
    socket.once('close', () => open.delete(socket))
  })
}

/**
 * Stop accepting, let in-flight requests finish, close idle keep-alive sockets; resolve when
 * closed, or after `graceMs` once the connections still open are cut and have closed.
 */
export function closeGracefully(server: http.Server, graceMs: number): Promise<void> {
  return new Promise((resolve) => {
    // server.close() closes the connections idle now; one whose request finishes later would stay
    // open for its keep-alive time: each is closed within IDLE_SWEEP_MS of falling idle. (Not by
    // answering `Connection: close`: a request pipelined behind it has run already, and its
    // answer would be dropped.)
    const sweep = setInterval(() => server.closeIdleConnections(), IDLE_SWEEP_MS)
    let cutting = false
    const timer = setTimeout(() => {
      cutting = true
      clearInterval(sweep)
      server.closeAllConnections()
      // Still in the set: not yet closed (its `closed` is true already). Upgraded connections are
      // not Node's to cut: whoever took them over closes them.
      const cut = [...(connections.get(server) ?? [])].filter((socket) => socket.destroyed)
      void Promise.all(cut.map((socket) => new Promise((closed) => socket.once('close', closed)))).then(() => resolve())
    }, graceMs)
    timer.unref()
    server.close(() => {
      clearTimeout(timer)
      clearInterval(sweep)
      // Once connections are cut, the server's close comes before theirs: that waits for them.
      if (!cutting) resolve()
    })
    server.closeIdleConnections()
  })
}
