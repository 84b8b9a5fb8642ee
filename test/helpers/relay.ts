import net from 'node:net'
import { fileURLToPath } from 'node:url'

/** A server at `listen` that pipes each connection to a new one to `target`, both ways; an error on either side ends both. */
export function relay(listen: net.ListenOptions, target: net.NetConnectOpts): Promise<net.Server> {
  const server = net.createServer((client) => {
    const upstream = net.connect(target)
    client.pipe(upstream).pipe(client)
    client.on('error', () => upstream.destroy())
    upstream.on('error', () => client.destroy())
  })
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(listen, () => resolve(server))
  })
}

// As a program (started in another network namespace): `relay.js <listen JSON> <target JSON>`,
// which prints `ready` once it listens.
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await relay(JSON.parse(process.argv[2]!) as net.ListenOptions, JSON.parse(process.argv[3]!) as net.NetConnectOpts)
  console.log('ready')
}
