import { readFile } from 'node:fs/promises'

/**
 * The bytes each TCP connection to `localPort` has sent or queued that its peer has not yet
 * acknowledged (the kernel's send queue, `tx_queue` in /proc/net/tcp, or tcp6 for an IPv6
 * listener), by the peer's port; null where /proc cannot be read. Node shows only what waits in its own buffer, but behind
 * a proxy on the same machine the kernel's queue can hold megabytes, and only the peer's
 * acknowledgements make it shrink. Peers are told apart by port alone: on loopback two at once
 * with the same port (from 127.0.0.1 and 127.0.0.2) would share one figure.
 */
export async function readSendQueues(localPort: number, family: string): Promise<Map<number, number> | null> {
  let text: string
  try {
    text = await readFile(family === 'IPv6' ? '/proc/net/tcp6' : '/proc/net/tcp', 'latin1')
  } catch {
    return null
  }
  const queues = new Map<number, number>()
  for (const line of text.split('\n').slice(1)) {
    // sl local_address rem_address st tx_queue:rx_queue ...; addresses as HEX:PORT (hex port).
    const [, local, remote, , txRx] = line.trim().split(/\s+/)
    if (!local || !remote || !txRx) continue
    if (parseInt(local.slice(local.lastIndexOf(':') + 1), 16) !== localPort) continue
    queues.set(parseInt(remote.slice(remote.lastIndexOf(':') + 1), 16), parseInt(txRx.slice(0, txRx.indexOf(':')), 16))
  }
  return queues
}
