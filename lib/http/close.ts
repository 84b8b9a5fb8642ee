import type http from 'node:http'

/** While closing, how often connections that have fallen idle are closed. */
const IDLE_SWEEP_MS = 100

/** Stop accepting, let in-flight requests finish, close idle keep-alive sockets; resolve when closed or after `graceMs`. */
export function closeGracefully(server: http.Server, graceMs: number): Promise<void> {
  return new Promise((resolve) => {
    // server.close() closes the connections idle now; one whose request finishes later would stay
    // open for its keep-alive time: each is closed within IDLE_SWEEP_MS of falling idle. (Not by
    // answering `Connection: close`: a request pipelined behind it has run already, and its
    // answer would be dropped.)
    const sweep = setInterval(() => server.closeIdleConnections(), IDLE_SWEEP_MS)
    const timer = setTimeout(() => {
      clearInterval(sweep)
      server.closeAllConnections()
      resolve()
    }, graceMs)
    timer.unref()
    server.close(() => {
      clearTimeout(timer)
      clearInterval(sweep)
      resolve()
    })
    server.closeIdleConnections()
  })
}
