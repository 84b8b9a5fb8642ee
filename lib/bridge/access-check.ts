import { randomBytes } from 'node:crypto'
import http from 'node:http'
import type { WebSocket } from 'ws'
import { messageOf } from '../log.js'
import { bridgeCredential, isAccessProof } from '../ticket.js'

/** How long the platform gets to answer one check before it counts as failed. */
const CHECK_TIMEOUT_MS = 5_000
/** The most of an answer read: `{success, admitted, reason}` is well under it. */
const MAX_ANSWER_BYTES = 4096

/** The platform's answer about one terminal. */
type Access = { admitted: true } | { admitted: false; reason: string }

/** The bridge's checks of its open terminals' access. */
interface AccessChecks {
  /** Check the connection's access every interval from now on, with the ticket it opened with, until it closes. */
  watch(ws: WebSocket, ticket: string, user: string): void
  /** Check every open terminal now (the platform says a session ended or a role was taken back); a burst is one round a second. */
  recheck(): void
  /**
   * The platform's proven answer about a terminal about to open with `ticket`, or null when there
   * is none to wait for (checks off; the platform unreachable, or its answer unproven: the terminal
   * opens, as open ones stay open). A ticket is good for its minute after the session it was
   * minted in has ended or its user's role was taken back; without this it would open a shell
   * until the first interval's check.
   */
  admission(ticket: string): Promise<Access | null>
  /** No more checks (shutdown); those under way are dropped. */
  stop(): void
}

/** Rounds of checks the platform asks for come at most this often: a burst of logouts is one round, not a storm of questions. */
const RECHECK_MIN_MS = 1_000

interface AccessCheckOptions {
  /** The platform, or null: no checks. */
  url: string | null
  /** Between two checks of one connection; 0: no checks. */
  intervalMs: number
  /** TERMINAL_TICKET_SECRET's keys: the bridge's credential, and the check of the platform's proofs. */
  keys: string[]
  log: (entry: Record<string, unknown>) => void
  /** The platform said the connection's access has ended, and why (a short phrase). */
  ended: (ws: WebSocket, reason: string) => void
}

/**
 * Ask the platform, for each open terminal every `intervalMs`, whether its user would still be let
 * in (POST /dev/terminal/access with the ticket it opened with): a logout of the session the
 * ticket was minted in, or a role revoked, ends the terminal within an interval. Only the
 * platform's answer "no", with its proof over a fresh challenge, ends one. A platform that cannot
 * be reached, or answers anything else, leaves every terminal open (a restart of the platform must
 * not end the developers' shells), and is logged once until it answers again.
 */
export function startAccessChecks({ url, intervalMs, keys, log, ended }: AccessCheckOptions): AccessChecks {
  if (url === null || intervalMs === 0) return { watch() {}, recheck() {}, admission: async () => null, stop() {} }
  const target = new URL('/dev/terminal/access', url)
  const credential = bridgeCredential(keys)
  /** Each open terminal's check, and its interval's timer. */
  const checks = new Map<WebSocket, { check: (asked: boolean) => void; timer: NodeJS.Timeout }>()
  const requests = new Set<http.ClientRequest>()
  let failing = false
  let stopped = false
  let lastRound = -Infinity
  let nextRound: NodeJS.Timeout | null = null
  const round = (): void => {
    nextRound = null
    lastRound = performance.now()
    for (const { check } of checks.values()) check(true)
  }

  const failed = (err: unknown): void => {
    if (failing || stopped) return
    failing = true
    log({ event: 'terminal.access_check_failed', error: messageOf(err), note: 'open terminals stay open until the platform answers' })
  }
  const answered = (): void => {
    if (!failing) return
    failing = false
    log({ event: 'terminal.access_check_restored' })
  }

  const ask = (ticket: string): Promise<Access> =>
    new Promise((resolve, reject) => {
      const challenge = randomBytes(18).toString('base64url')
      const body = JSON.stringify({ ticket, challenge })
      // A connection of its own (no agent's pool): a pooled socket outlives its answer without an
      // error listener, and destroying it with an error then ended the bridge.
      const req = http.request(target, {
        method: 'POST',
        agent: false,
        headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      })
      /** Settle as failed and drop the exchange; destroy() without an error emits none. */
      const fail = (err: Error): void => {
        clearTimeout(deadline)
        reject(err)
        req.destroy()
      }
      // A deadline for the whole answer, not an idle time-out: a listener that sends a byte now
      // and then must not hold this connection's checks, the ones the platform asks for included.
      const deadline = setTimeout(() => fail(new Error(`no answer within ${CHECK_TIMEOUT_MS} ms`)), CHECK_TIMEOUT_MS)
      requests.add(req)
      req.once('close', () => {
        clearTimeout(deadline)
        requests.delete(req)
        reject(new Error('the connection closed before an answer'))
      })
      req.on('error', fail)
      req.once('response', (res) => {
        const chunks: Buffer[] = []
        let size = 0
        res.on('data', (chunk: Buffer) => {
          size += chunk.length
          if (size > MAX_ANSWER_BYTES) return fail(new Error(`an answer over ${MAX_ANSWER_BYTES} bytes`))
          chunks.push(chunk)
        })
        res.on('error', fail)
        res.once('end', () => {
          clearTimeout(deadline)
          if (size > MAX_ANSWER_BYTES) return
          const access = res.statusCode === 200 ? accessOf(Buffer.concat(chunks).toString('utf8'), keys, challenge, ticket) : null
          if (access) resolve(access)
          else reject(new Error(`POST ${target.pathname} answered ${res.statusCode}${res.statusCode === 200 ? ' without an access answer the platform proved' : ''}`))
        })
      })
      req.end(body)
    })
  /** The platform's proven answer about `ticket`, or null when it gave none (logged once, until it answers again). */
  const settle = (ticket: string): Promise<Access | null> =>
    ask(ticket).then(
      (access) => {
        answered()
        return access
      },
      (err: unknown) => {
        failed(err)
        return null
      },
    )

  return {
    watch(ws, ticket, user) {
      if (stopped) return
      let asking = false
      /** A check the platform asked for while one was under way: its answer may predate the change. */
      let again = false
      const check = (asked: boolean): void => {
        // A platform slower than the interval gets one question at a time per connection.
        if (asking) {
          again ||= asked
          return
        }
        asking = true
        settle(ticket)
          .then((access) => {
            if (access === null || access.admitted || stopped || ws.readyState !== ws.OPEN) return
            log({ event: 'terminal.access_ended', user, reason: access.reason })
            ended(ws, access.reason)
          })
          .finally(() => {
            asking = false
            if (!again || stopped || ws.readyState !== ws.OPEN) return
            again = false
            check(false)
          })
      }
      const timer = setInterval(() => check(false), intervalMs).unref()
      checks.set(ws, { check, timer })
      ws.once('close', () => {
        clearInterval(timer)
        checks.delete(ws)
      })
    },
    admission(ticket) {
      // Stopping: no question, and the upgrade goes on to the shutdown's 1001.
      return stopped ? Promise.resolve(null) : settle(ticket)
    },
    recheck() {
      if (stopped || nextRound !== null) return
      const wait = lastRound + RECHECK_MIN_MS - performance.now()
      if (wait <= 0) round()
      else nextRound = setTimeout(round, wait).unref()
    },
    stop() {
      stopped = true
      for (const { timer } of checks.values()) clearInterval(timer)
      if (nextRound !== null) clearTimeout(nextRound)
      for (const req of requests) req.destroy()
    },
  }
}

/**
 * The platform's answer, or null when the body is not one or its proof is not the platform's for
 * this challenge and ticket: `reason` kept to a close frame's printable phrase.
 */
function accessOf(text: string, keys: string[], challenge: string, ticket: string): Access | null {
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch {
    return null
  }
  if (typeof body !== 'object' || body === null) return null
  const { success, admitted, reason, proof } = body as Record<string, unknown>
  // The answer a proof covers: null for admitted, else the reason; undefined for neither shape.
  const answer = admitted === true && reason === undefined ? null : admitted === false && typeof reason === 'string' ? reason : undefined
  if (success !== true || answer === undefined || typeof proof !== 'string' || !isAccessProof(keys, challenge, ticket, answer, proof)) return null
  if (admitted) return { admitted: true }
  const phrase = (reason as string).replace(/[^\x20-\x7e]/g, '').slice(0, 80)
  return { admitted: false, reason: phrase || 'access revoked' }
}
