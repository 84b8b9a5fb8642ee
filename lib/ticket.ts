import { randomBytes } from 'node:crypto'
import { decodeJsonPart, sign, signedByOneOf } from './signed.js'
import { Compile, Type } from './typebox.js'

/** A ticket lives at most this long (CONTRACT §6: "at most 60 s old"). */
export const TICKET_TTL_MS = 60_000

/** Who a ticket admits, until when, and the nonce that makes it single use. */
export interface TicketClaims {
  /** Backend user id. */
  userId: string
  username: string
  /** Unix milliseconds. */
  expiresAt: number
  nonce: string
  /**
   * The session the ticket was minted in, sealed by the platform (sealReference): the bridge keeps
   * it and has the platform check it again while the terminal is open (POST /dev/terminal/access).
   */
  session: string
}

/** The longest ticket taken: its sealed session holds a refresh token (as the cookie, under 4096 characters, does). */
export const MAX_TICKET_CHARS = 4096

const Claims = Compile(
  Type.Object(
    {
      userId: Type.String({ minLength: 1, maxLength: 256 }),
      username: Type.String({ minLength: 1, maxLength: 256 }),
      expiresAt: Type.Integer({ minimum: 0 }),
      nonce: Type.String({ pattern: '^[A-Za-z0-9_-]{16,64}$' }),
      session: Type.String({ pattern: '^[A-Za-z0-9_-]{1,3000}$' }),
    },
    { additionalProperties: false },
  ),
)

/**
 * Mint a ticket for `user` in the sealed `session`: `base64url(JSON claims).base64url(HMAC-SHA256)`,
 * signed with the first key. The platform mints it at POST /dev/terminal/ticket; the bridge verifies it.
 */
export function mintTicket(keys: string[], user: { id: string; username: string }, session: string, now: number): { ticket: string; claims: TicketClaims } {
  const claims: TicketClaims = {
    userId: user.id,
    username: user.username,
    expiresAt: now + TICKET_TTL_MS,
    nonce: randomBytes(18).toString('base64url'),
    session,
  }
  const payload = Buffer.from(JSON.stringify(claims)).toString('base64url')
  return { ticket: `${payload}.${sign(keys[0]!, payload).toString('base64url')}`, claims }
}

/**
 * The claims of a ticket whose signature matches one of `keys` (rotation: all verify) and which
 * has not expired at `now`; null otherwise. Single use is the caller's job (SpentTickets).
 */
export function verifyTicket(keys: string[], ticket: string, now: number): TicketClaims | null {
  const claims = readTicket(keys, ticket)
  // A ticket further in the future than a fresh one would be is not one we minted under this rule.
  if (!claims || claims.expiresAt <= now || claims.expiresAt > now + TICKET_TTL_MS) return null
  return claims
}

/**
 * The claims of a ticket whose signature matches one of `keys`, expired or not; null otherwise.
 * The platform reads an open terminal's ticket with it when the bridge asks whether the terminal may stay open.
 */
export function readTicket(keys: string[], ticket: string): TicketClaims | null {
  if (ticket.length > MAX_TICKET_CHARS) return null
  const dot = ticket.indexOf('.')
  if (dot <= 0) return null
  const payload = ticket.slice(0, dot)
  if (!signedByOneOf(keys, payload, ticket.slice(dot + 1))) return null
  const claims = decodeJsonPart(payload)
  return Claims.Check(claims) ? claims : null
}

// What the bridge's credential signs: text no ticket's payload (base64url) can be.
const BRIDGE_CREDENTIAL_TEXT = 'playfield terminal bridge v1'

/**
 * The bridge's credential for POST /dev/terminal/access (an Authorization bearer): HMAC of a fixed
 * text under the ticket secret's first key, so only a holder of that secret asks the platform
 * about open terminals.
 */
export function bridgeCredential(keys: string[]): string {
  return sign(keys[0]!, BRIDGE_CREDENTIAL_TEXT).toString('base64url')
}

/** Whether `credential` is the bridge's under one of `keys` (all of a rotation). */
export function isBridgeCredential(keys: string[], credential: string): boolean {
  return signedByOneOf(keys, BRIDGE_CREDENTIAL_TEXT, credential)
}

// What the platform's notice to the bridge signs: text no ticket's payload or credential can be.
const ACCESS_CHANGED_TEXT = 'playfield platform access changed v1'

/**
 * The platform's credential for the bridge's POST /access-changed (an Authorization bearer): "a
 * session ended or a role was taken back, check the open terminals now". It asks for checks that
 * only the platform's proven answers can act on, so what it is worth to anyone else is a few
 * extra questions; the bridge still takes it only from a holder of the ticket secret.
 */
export function accessChangedCredential(keys: string[]): string {
  return sign(keys[0]!, ACCESS_CHANGED_TEXT).toString('base64url')
}

/** Whether `credential` is the platform's access-changed credential under one of `keys`. */
export function isAccessChangedCredential(keys: string[], credential: string): boolean {
  return signedByOneOf(keys, ACCESS_CHANGED_TEXT, credential)
}

/**
 * What the platform's proof of an access answer signs: the bridge's fresh challenge, the ticket the
 * question was about, and the answer, `reason` null for "still admitted" (never taken for a reason,
 * "admitted" included). Without the ticket, whatever held the platform's port could ask another
 * platform of the same secret about a signed-out user's ticket, with the bridge's challenge, and
 * pass its "signed out" off as the answer about someone else's terminal.
 */
const answerText = (challenge: string, ticket: string, reason: string | null): string =>
  `playfield terminal access answer v2\n${challenge}\n${ticket}\n${reason === null ? 'admitted' : `ended: ${reason}`}`

/**
 * The platform's proof of its answer about `ticket` (null: admitted; else the reason access ended)
 * to the bridge's `challenge`: what listens on the platform's port while the platform is down (any
 * account may take a free port) cannot answer for it, so it cannot end the developers' terminals.
 */
export function accessProof(keys: string[], challenge: string, ticket: string, reason: string | null): string {
  return sign(keys[0]!, answerText(challenge, ticket, reason)).toString('base64url')
}

/** Whether `proof` is the platform's for this challenge, ticket and answer, under one of `keys`. */
export function isAccessProof(keys: string[], challenge: string, ticket: string, reason: string | null, proof: string): boolean {
  return signedByOneOf(keys, answerText(challenge, ticket, reason), proof)
}

/**
 * The nonces of tickets already used, each kept until its ticket would have expired anyway: on the
 * wall clock, and for a ticket's whole life on the monotonic one too, so that a clock stepped
 * forward and back again does not forget a nonce whose ticket is valid once more.
 */
export class SpentTickets {
  /** Nonce -> the wall-clock expiry of its ticket and TICKET_TTL_MS past its use on the monotonic clock. */
  readonly #spent = new Map<string, { expiresAt: number; keepUntil: number }>()

  /** Mark the ticket spent at `now` (Unix ms) and `elapsed` (monotonic ms); false when it already was (a replay). */
  spend(claims: TicketClaims, now: number, elapsed: number): boolean {
    for (const [nonce, held] of this.#spent) if (held.expiresAt <= now && held.keepUntil <= elapsed) this.#spent.delete(nonce)
    if (this.#spent.has(claims.nonce)) return false
    this.#spent.set(claims.nonce, { expiresAt: claims.expiresAt, keepUntil: elapsed + TICKET_TTL_MS })
    return true
  }

  /** How many nonces are held (for tests of the pruning). */
  get size(): number {
    return this.#spent.size
  }
}
