import type { Server } from 'node:http'
import type { WebSocket } from 'ws'
import { readSendQueues } from './send-queues.js'

/**
 * Each connection is pinged this often, and cut when it has shown no sign of life for two beats in
 * a row (40-60 s after its network path died): without it, a client gone without a close (a laptop
 * off its network) held its shell and one of the TERMINAL_MAX_CONN places for as long as the
 * proxy's idle time allows. Browsers answer pings themselves, also in background tabs. Any frame
 * from the client answers too, and so does output it took: a ping queues behind up to 256 KiB of
 * output in the bridge and megabytes in the kernel, which a client on a 40 KB/s link takes longer
 * than this to read (it would be cut, its shell with it). Output counts as taken when a frame
 * that waited for room in the kernel's send buffer leaves (serveConnection), or when the kernel's
 * queue of unacknowledged bytes shrank since the last beat (readSendQueues): both happen only on
 * the client's acknowledgements. A dead path acknowledges nothing. One silent beat is forgiven:
 * when the first cut, a Wi-Fi drop of 25 s ended the shell or not by where it fell between two
 * beats (a slow-network audit); now any silence shorter than 40 s is survived.
 */
const HEARTBEAT_MS = 20_000
/** Beats in a row without a sign of life that cut a connection. */
const SILENT_BEATS = 2

/** The bridge's heartbeat over its live connections. */
interface Heartbeat {
  /** Watch a connection from now on (it counts as having answered); `peerPort` finds its kernel queue. */
  watch(ws: WebSocket, peerPort: number): void
  /** The connection took queued output (see serveConnection). */
  took(ws: WebSocket): void
  /** No more beats (shutdown). */
  stop(): void
}

/** Beat every HEARTBEAT_MS over `connections`: ping them, and cut those silent for SILENT_BEATS beats. */
export function startHeartbeat(server: Server, connections: ReadonlyMap<WebSocket, unknown>): Heartbeat {
  /** Connections that have answered their last ping, or sent a frame, since the last beat (or opened since). */
  const answered = new WeakSet<WebSocket>()
  /** Connections that took queued output since the last beat. */
  const taking = new WeakSet<WebSocket>()
  /** Each connection's peer port, and the kernel's unacknowledged bytes for it at the last beat. */
  const peers = new WeakMap<WebSocket, number>()
  const unacked = new WeakMap<WebSocket, number>()
  /** Beats in a row each connection has let pass without a sign of life. */
  const silent = new WeakMap<WebSocket, number>()
  let stopped = false
  const beat = async (): Promise<void> => {
    const address = server.address()
    const queues = connections.size > 0 && typeof address === 'object' && address ? await readSendQueues(address.port, address.family) : null
    if (stopped) return
    for (const ws of connections.keys()) {
      const ponged = answered.delete(ws)
      const took = taking.delete(ws)
      const queued = queues?.get(peers.get(ws) ?? -1)
      const before = unacked.get(ws)
      if (queued === undefined) unacked.delete(ws)
      else unacked.set(ws, queued)
      const acked = queued !== undefined && before !== undefined && queued < before
      const beats = ponged || took || acked ? 0 : (silent.get(ws) ?? 0) + 1
      silent.set(ws, beats)
      if (beats < SILENT_BEATS) ws.ping()
      else ws.terminate()
    }
  }
  const timer = setInterval(() => void beat(), HEARTBEAT_MS).unref()
  return {
    watch(ws, peerPort) {
      peers.set(ws, peerPort)
      answered.add(ws)
      ws.on('pong', () => answered.add(ws))
      ws.on('message', () => answered.add(ws))
    },
    took(ws) {
      taking.add(ws)
    },
    stop() {
      stopped = true
      clearInterval(timer)
    },
  }
}
