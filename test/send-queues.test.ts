import net from 'node:net'
import { once } from 'node:events'
import t from 'tap'
import { readSendQueues } from '../lib/bridge/send-queues.js'

// The heartbeat spares a slow reader whose kernel queue shrinks (lib/bridge/heartbeat.ts): the
// queue must be found for a bridge on ::1 (TERMINAL_HOST=::1) as for one on 127.0.0.1.

async function listening(host: string): Promise<net.Server | null> {
  const server = net.createServer()
  try {
    server.listen(0, host)
    await once(server, 'listening')
    return server
  } catch {
    return null
  }
}

for (const [host, family] of [['127.0.0.1', 'IPv4'], ['::1', 'IPv6']] as const) {
  const server = await listening(host)
  t.test(`readSendQueues finds each peer of a listener on ${host} by its port, with its unacknowledged bytes`, { skip: server ? false : `${host} cannot be listened on here` }, async (t) => {
    if (!server) return
    t.teardown(() => server.close())
    const accepted = once(server, 'connection')
    const client = net.connect((server.address() as net.AddressInfo).port, host)
    await once(client, 'connect')
    const [peer] = (await accepted) as [net.Socket]
    t.teardown(() => {
      client.destroy()
      peer.destroy()
    })
    const port = (server.address() as net.AddressInfo).port
    const queues = await readSendQueues(port, family)
    t.ok(queues, '/proc/net is readable')
    t.equal(queues!.get(client.localPort!), 0, 'the peer, by its port: nothing unacknowledged on an idle connection')
    t.same([...queues!.keys()].filter((p) => p !== 0), [client.localPort], 'only connections to this listener (0: the listening socket)')
  })
}
