import net from 'node:net'

/**
 * An emulated network link for the slow-link benchmark: a TCP proxy on loopback that gives each
 * direction a bandwidth and a one-way delay, as Linux's netem would (this machine's kernel has
 * none). Bytes keep their order: each chunk leaves the sender's wire after the ones before it, at
 * the link's rate, and arrives `delayMs` later. A direction with more than 64 KiB waiting for its
 * wire (a router's queue; what is on the wire, in flight for `delayMs`, is not counted) pauses its
 * source until it is down to 16 KiB, so a sender meets the link's pace through TCP, as on a real
 * path. The options may change between connections (the benchmark's scenarios).
 */
export interface LinkOptions {
  /** Each direction's bandwidth. */
  bitsPerSecond: number
  /** Each direction's one-way delay (half the round trip). */
  delayMs: number
}

/** A segment's worth: the wire is shaped chunk by chunk, as packets are. */
const CHUNK = 1460
const HIGH = 64 * 1024
const LOW = 16 * 1024

/** One direction of one connection. */
class Direction {
  /** Bytes handed to the receiving side. */
  delivered = 0
  #queue: { data: Buffer; due: number }[] = []
  /** When the wire can take the next byte (ms, monotonic). */
  #wireFree = 0
  #timer: NodeJS.Timeout | null = null
  #paused = false
  #ended = false

  constructor(
    private readonly from: net.Socket,
    private readonly to: net.Socket,
    private readonly options: LinkOptions,
  ) {
    from.on('data', (data: Buffer) => this.#push(data))
    from.on('end', () => {
      this.#ended = true
      this.#pump()
    })
    to.on('drain', () => this.#pump())
  }

  #push(data: Buffer): void {
    const now = performance.now()
    for (let i = 0; i < data.length; i += CHUNK) {
      const chunk = data.subarray(i, i + CHUNK)
      this.#wireFree = Math.max(now, this.#wireFree) + (chunk.length * 8000) / this.options.bitsPerSecond
      this.#queue.push({ data: chunk, due: this.#wireFree + this.options.delayMs })
    }
    if (this.#waiting(now) > HIGH && !this.#paused) {
      this.#paused = true
      this.from.pause()
    }
    this.#pump()
  }

  /** Bytes not yet on the wire at `now`. */
  #waiting(now: number): number {
    return (Math.max(0, this.#wireFree - now) * this.options.bitsPerSecond) / 8000
  }

  #pump(): void {
    if (this.#timer) clearTimeout(this.#timer)
    this.#timer = null
    if (this.to.destroyed) return
    const now = performance.now()
    while (this.#queue.length > 0 && this.#queue[0]!.due <= now) {
      if (this.to.writableNeedDrain) return
      const { data } = this.#queue.shift()!
      this.delivered += data.length
      this.to.write(data)
    }
    if (this.#paused && this.#waiting(now) < LOW && !this.to.writableNeedDrain) {
      this.#paused = false
      this.from.resume()
    }
    if (this.#queue.length > 0) this.#timer = setTimeout(() => this.#pump(), Math.max(1, this.#queue[0]!.due - now))
    else if (this.#ended) this.to.end()
  }

  stop(): void {
    if (this.#timer) clearTimeout(this.#timer)
  }
}

/** A running link in front of a loopback port. */
export class Link {
  readonly options: LinkOptions
  #server: net.Server
  #downstream = new Set<Direction>()
  #delivered = 0
  #sockets = new Set<net.Socket>()

  private constructor(server: net.Server, options: LinkOptions) {
    this.#server = server
    this.options = options
  }

  /** A link on an ephemeral loopback port (or `port`) to `target` on loopback. */
  static async open(target: number, options: LinkOptions, port = 0): Promise<Link> {
    const server = net.createServer({ allowHalfOpen: true })
    const link = new Link(server, options)
    server.on('connection', (client) => link.#connect(client, target))
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(port, '127.0.0.1', resolve)
    })
    return link
  }

  get port(): number {
    return (this.#server.address() as net.AddressInfo).port
  }

  /** Bytes the link has delivered toward its clients, over every connection. */
  delivered(): number {
    let live = 0
    for (const down of this.#downstream) live += down.delivered
    return this.#delivered + live
  }

  #connect(client: net.Socket, target: number): void {
    const server = net.connect({ host: '127.0.0.1', port: target, allowHalfOpen: true })
    for (const socket of [client, server]) {
      socket.setNoDelay(true)
      this.#sockets.add(socket)
    }
    const up = new Direction(client, server, this.options)
    const down = new Direction(server, client, this.options)
    this.#downstream.add(down)
    const close = (): void => {
      client.destroy()
      server.destroy()
      up.stop()
      down.stop()
      if (this.#downstream.delete(down)) this.#delivered += down.delivered
      this.#sockets.delete(client)
      this.#sockets.delete(server)
    }
    client.on('error', close).on('close', close)
    server.on('error', close).on('close', close)
  }

  close(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy()
    return new Promise((resolve) => this.#server.close(() => resolve()))
  }
}

/**
 * What the link carries, measured: a sink on loopback behind a link of these options, fed as fast
 * as it takes for `seconds` after a second's start. Bytes a second (the limit a scenario is read
 * against, since timers and the event loop shape the emulated wire, not only its nominal rate).
 */
export async function measureLink(options: LinkOptions, seconds = 3): Promise<number> {
  let received = 0
  const sink = net.createServer((socket) => socket.on('data', (data: Buffer) => (received += data.length)))
  await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve))
  const link = await Link.open((sink.address() as net.AddressInfo).port, options)
  const socket = net.connect({ host: '127.0.0.1', port: link.port })
  const block = Buffer.alloc(16 * 1024, 0x79)
  let writing = true
  const feed = (): void => {
    while (writing && socket.write(block));
  }
  socket.on('drain', feed)
  socket.once('connect', feed)
  await new Promise((resolve) => setTimeout(resolve, 1000 + options.delayMs))
  const from = received
  const start = performance.now()
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000))
  const rate = ((received - from) * 1000) / (performance.now() - start)
  writing = false
  socket.destroy()
  await link.close()
  await new Promise((resolve) => sink.close(resolve))
  return rate
}
