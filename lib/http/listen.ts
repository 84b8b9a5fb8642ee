import type { Server } from 'node:net'

/**
 * Listen on `host`:`port`: resolves with the port bound (PORT=0 picks one), rejects with the
 * listen error (EADDRINUSE, EACCES, EADDRNOTAVAIL). It resolves from the `listening` callback, so
 * code after the `await` runs before the first connection is accepted.
 */
export function listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => {
      server.off('error', reject)
      const address = server.address()
      resolve(typeof address === 'object' && address ? address.port : port)
    })
  })
}
