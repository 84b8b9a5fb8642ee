import { lookup } from 'node:dns/promises'
import { isIP, type AddressInfo, type Server } from 'node:net'
import { ConfigError } from '../config-error.js'
import { listenProblem } from '../config-checks.js'

/** Where a process is configured to listen, and the variables that say so (for its error lines). */
export interface ListenAddress {
  host: string
  port: number
  hostVar: string
  portVar: string
  /** Addresses an error line offers (listenProblem). */
  examples?: string
}

/** The first descriptor systemd passes (sd_listen_fds(3)). */
const LISTEN_FDS_START = 3

/**
 * Listen where `address` says: on the socket systemd passed (socket activation, as the units'
 * `.socket` files do), or else bound here. The passed socket must be a TCP socket on that same
 * address, since the other process and nginx reach this one at its HOST and PORT: one elsewhere is
 * a configuration error, as a port in use is. Resolves with the port and whether the socket was passed.
 */
export async function listenAt(server: Server, address: ListenAddress): Promise<{ port: number; socket: 'systemd' | 'bound' }> {
  const fd = passedSocket(process.env)
  if (fd === null) {
    const { port } = await listenWith(server, () => server.listen(address.port, address.host)).catch((err: NodeJS.ErrnoException) => {
      throw listenProblem(err, address)
    })
    return { port, socket: 'bound' }
  }
  // Resolved before listening: from 'listening' to the caller's next line (a root bridge's drop of
  // privileges) nothing may wait on I/O, or a connection in the socket's queue is accepted meanwhile.
  const wanted = await addressesOf(address)
  const passed = await listenWith(server, () => server.listen({ fd })).catch((err: NodeJS.ErrnoException) => {
    throw new ConfigError(`LISTEN_FDS: the descriptor systemd passed cannot be listened on (${err.code ?? err.message}); expected the stream socket of a .socket unit's ListenStream=`)
  })
  const problem = mismatch(passed.address, address, wanted)
  if (problem !== null) {
    server.close()
    throw new ConfigError(problem)
  }
  return { port: passed.port, socket: 'systemd' }
}

/**
 * The descriptor of the one socket systemd passed this process, or null when it passed none.
 * The variables are taken out of the environment either way (sd_listen_fds' unset_environment):
 * they name this process's pid, so nothing it starts may read them as its own.
 */
function passedSocket(env: NodeJS.ProcessEnv): number | null {
  const { LISTEN_PID: pid, LISTEN_FDS: count } = env
  delete env.LISTEN_PID
  delete env.LISTEN_FDS
  delete env.LISTEN_FDNAMES
  if (pid === undefined || count === undefined || pid !== String(process.pid)) return null
  if (count === '0') return null
  if (count !== '1') {
    throw new ConfigError(`LISTEN_FDS: systemd passed ${JSON.stringify(count)} sockets; expected 1 (one ListenStream= in the .socket unit)`)
  }
  return LISTEN_FDS_START
}

/**
 * Why a passed socket is not the configured address (a line naming the variables), or null when
 * it is one of `wanted`, the addresses the configured host names.
 */
function mismatch(bound: string | AddressInfo, want: ListenAddress, wanted: string[]): string | null {
  const port = want.port === 0 ? '<any port>' : want.port
  const configured = show(want.host, port)
  // ListenStream= takes numeric addresses only: a host name's own (localhost: 127.0.0.1 or ::1).
  const listenStream = isIP(want.host) ? configured : wanted.map((a) => show(a, port)).join(' or ')
  const problem = (what: string): string =>
    `LISTEN_FDS: the socket systemd passed ${what}, not on ${want.hostVar} and ${want.portVar} (${configured}); expected a .socket unit whose ListenStream= is ${listenStream}`
  // A UNIX socket's path is not known to a process it was passed to.
  if (typeof bound === 'string') return problem('is a UNIX socket')
  const portMatches = want.port === 0 || bound.port === want.port
  if (portMatches && wanted.includes(canonical(bound.address))) return null
  return problem(`listens on ${show(bound.address, bound.port)}`)
}

/**
 * The addresses the configured host names (an IP literal itself, a name as the resolver gives it),
 * canonical. A name the resolver does not know gets the line a start without a passed socket gives it.
 */
async function addressesOf(address: ListenAddress): Promise<string[]> {
  if (isIP(address.host)) return [canonical(address.host)]
  const found = await lookup(address.host, { all: true }).catch((err: NodeJS.ErrnoException) => {
    throw listenProblem(err, address)
  })
  return found.map((a) => canonical(a.address))
}

/** An address in one spelling (`::0001` as `::1`), so that equal addresses compare equal. */
function canonical(address: string): string {
  return isIP(address) === 6 ? new URL(`http://[${address}]`).hostname.slice(1, -1) : address
}

const show = (host: string, port: number | string): string => (host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`)

/**
 * Run `start` (a server.listen call) and resolve with the address once listening, or reject with
 * its error (EADDRINUSE, EACCES, EADDRNOTAVAIL). It resolves from the `listening` event, so code
 * after the `await` runs before the first connection is accepted.
 */
function listenWith(server: Server, start: () => void): Promise<{ port: number; address: string | AddressInfo }> {
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.once('listening', () => {
      server.off('error', reject)
      const address = server.address()
      resolve({ port: typeof address === 'object' && address ? address.port : 0, address: address ?? '' })
    })
    start()
  })
}
