import t from 'tap'
import { accessProof, bridgeCredential, isAccessProof, isBridgeCredential, mintTicket, readTicket, SpentTickets, TICKET_TTL_MS, verifyTicket } from '../lib/ticket.js'

const KEY = 'k'.repeat(40)
const OLD = 'o'.repeat(40)
const user = { id: 'user-1', username: 'dev' }
/** A sealed session reference, as the platform makes it: opaque base64url to the ticket. */
const SESSION = 'c2VhbGVkLXNlc3Npb24'
const now = 1_800_000_000_000

t.test('a minted ticket verifies and names the user, an expiry within 60 s and a nonce', async (t) => {
  const { ticket, claims } = mintTicket([KEY], user, SESSION, now)
  t.same(verifyTicket([KEY], ticket, now), claims)
  t.match(claims, { userId: 'user-1', username: 'dev', expiresAt: now + TICKET_TTL_MS, session: SESSION })
  t.equal(TICKET_TTL_MS, 60_000)
  t.match(claims.nonce, /^[A-Za-z0-9_-]{24}$/)
  t.not(mintTicket([KEY], user, SESSION, now).claims.nonce, claims.nonce, 'fresh nonce each time')
})

const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
/** The last character of a 32-byte MAC in base64url carries 2 spare bits: this one differs only there. */
const spareBitsChanged = (last: string): string => BASE64URL[BASE64URL.indexOf(last) ^ 1]!

t.test('a ticket forged, altered, expired, cut short or of another shape verifies as nothing', async (t) => {
  const { ticket } = mintTicket([KEY], user, SESSION, now)
  const [payload, mac] = ticket.split('.') as [string, string]
  const reclaim = (change: Record<string, unknown>): string => {
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString())
    return Buffer.from(JSON.stringify({ ...claims, ...change })).toString('base64url') + '.' + mac
  }
  const cases: [string, string, number, string[]][] = [
    ['signed with another key', mintTicket([OLD], user, SESSION, now).ticket, now, [KEY]],
    ['claims changed after signing', reclaim({ userId: 'admin' }), now, [KEY]],
    ['expiry pushed out', reclaim({ expiresAt: now + 3_600_000 }), now, [KEY]],
    ['mac cut short', `${payload}.${mac.slice(0, 10)}`, now, [KEY]],
    ['no mac', payload, now, [KEY]],
    ['empty', '', now, [KEY]],
    ['garbage', '....', now, [KEY]],
    ['expired by a millisecond', ticket, now + TICKET_TTL_MS, [KEY]],
    ['minted in the future (beyond the 60 s rule)', mintTicket([KEY], user, SESSION, now + 1000).ticket, now - 1, [KEY]],
    ['too long', 'a'.repeat(5000) + '.' + mac, now, [KEY]],
    // Each of these decodes to the right bytes under Node's lenient base64url: the text must match.
    ['the mac\'s last character changed in its spare bits', `${payload}.${mac.slice(0, -1)}${spareBitsChanged(mac.at(-1)!)}`, now, [KEY]],
    ['characters outside base64url appended to the mac', `${payload}.${mac}!!`, now, [KEY]],
    ['a character outside base64url inside the mac', `${payload}.${mac.slice(0, 20)}*${mac.slice(20)}`, now, [KEY]],
    ['the mac padded', `${payload}.${mac}=`, now, [KEY]],
  ]
  for (const [name, value, at, keys] of cases) t.equal(verifyTicket(keys, value, at), null, name)
  // A validly signed payload that is not our claims shape.
  const foreign = Buffer.from(JSON.stringify({ userId: 'x' })).toString('base64url')
  const { createHmac } = await import('node:crypto')
  const signed = `${foreign}.${createHmac('sha256', KEY).update(foreign).digest('base64url')}`
  t.equal(verifyTicket([KEY], signed, now), null, 'signed, but not ticket claims')
})

t.test('key rotation: the first key signs, every key verifies', async (t) => {
  const { ticket, claims } = mintTicket([OLD], user, SESSION, now)
  t.same(verifyTicket([KEY, OLD], ticket, now), claims)
  // The platform signs with the new key while both are listed: a bridge that already dropped the
  // old one (or one that never had it) still admits the ticket.
  const rotated = mintTicket([KEY, OLD], user, SESSION, now)
  t.same(verifyTicket([KEY], rotated.ticket, now), rotated.claims, 'signed with the first key')
  t.equal(verifyTicket([OLD], rotated.ticket, now), null, 'not with the old one')
})

t.test('SpentTickets: single use, and nonces are pruned once their ticket expired', async (t) => {
  const spent = new SpentTickets()
  const a = mintTicket([KEY], user, SESSION, now).claims
  const b = mintTicket([KEY], user, SESSION, now + 30_000).claims
  // The monotonic clock (third argument) runs with the wall clock here.
  t.equal(spent.spend(a, now, 0), true)
  t.equal(spent.spend(a, now + 1, 1), false, 'replay refused')
  t.equal(spent.spend(b, now + 30_000, 30_000), true)
  t.equal(spent.size, 2)
  const c = mintTicket([KEY], user, SESSION, now + TICKET_TTL_MS).claims
  t.equal(spent.spend(c, now + TICKET_TTL_MS, TICKET_TTL_MS), true)
  t.equal(spent.size, 2, 'a was pruned at its expiry')
})

t.test('SpentTickets: a wall clock stepped forward and back again keeps a used nonce whose ticket is valid again', async (t) => {
  const spent = new SpentTickets()
  const minted = mintTicket([KEY], user, SESSION, now)
  const a = minted.claims
  t.equal(spent.spend(a, now, 0), true)
  // Two hours ahead, a second later: a's ticket has expired on the wall clock, not on the monotonic one.
  const ahead = mintTicket([KEY], user, SESSION, now + 7_200_000).claims
  t.equal(spent.spend(ahead, now + 7_200_000, 1_000), true)
  t.equal(spent.size, 2, 'a is kept')
  // The clock is put right: a verifies again, and is still spent.
  t.same(verifyTicket([KEY], minted.ticket, now + 2_000), a, 'a verifies')
  t.equal(spent.spend(a, now + 2_000, 2_000), false, 'replay refused')
  // A minute on, on both clocks, a is pruned (ahead is still valid on the wall clock).
  const later = mintTicket([KEY], user, SESSION, now + TICKET_TTL_MS).claims
  t.equal(spent.spend(later, now + TICKET_TTL_MS, TICKET_TTL_MS), true)
  t.equal(spent.size, 2, 'a pruned; ahead and later held')
})

t.test('readTicket reads an expired ticket of ours (the platform\'s access check), and nothing forged or altered', async (t) => {
  const { ticket, claims } = mintTicket([KEY], user, SESSION, now)
  t.same(readTicket([KEY], ticket), claims, 'fresh')
  t.equal(verifyTicket([KEY], ticket, now + 3_600_000), null, 'an hour later the bridge refuses it')
  t.same(readTicket([KEY], ticket), claims, 'and the platform still reads it (it holds no time)')
  t.same(readTicket([KEY, OLD], mintTicket([OLD], user, SESSION, now).ticket)?.userId, 'user-1', 'any key of a rotation')
  const [payload, mac] = ticket.split('.') as [string, string]
  const swapped = Buffer.from(JSON.stringify({ ...claims, session: 'b3RoZXItc2Vzc2lvbg' })).toString('base64url')
  t.equal(readTicket([KEY], `${swapped}.${mac}`), null, 'another session put in after signing')
  t.equal(readTicket([OLD], ticket), null, 'a key that did not sign it')
  t.equal(readTicket([KEY], `${payload}.${mac}x`), null, 'a mac with more after it')
  const unsealed = Buffer.from(JSON.stringify({ ...claims, session: 'not base64url!' })).toString('base64url')
  const { createHmac } = await import('node:crypto')
  t.equal(readTicket([KEY], `${unsealed}.${createHmac('sha256', KEY).update(unsealed).digest('base64url')}`), null, 'signed, but a session that is no sealed reference')
})

t.test("the bridge's credential: one per key, every key of a rotation accepts its own, and no ticket's mac is one", async (t) => {
  const credential = bridgeCredential([KEY, OLD])
  t.match(credential, /^[A-Za-z0-9_-]{43}$/)
  t.ok(isBridgeCredential([KEY], credential), 'the first key signs it')
  t.ok(isBridgeCredential([OLD, KEY], credential), 'listed second on the platform')
  t.notOk(isBridgeCredential([OLD], credential), 'not a key that did not sign it')
  t.ok(isBridgeCredential([KEY, OLD], bridgeCredential([OLD])), "a bridge still on the old key, while the platform lists both")
  t.notOk(isBridgeCredential([KEY], ''), 'empty')
  t.notOk(isBridgeCredential([KEY], `${credential}=`), 'padded')
  const mac = mintTicket([KEY], user, SESSION, now).ticket.split('.')[1]!
  t.notOk(isBridgeCredential([KEY], mac), "a ticket's mac, which the page sees")
})

t.test("the platform's proof of an access answer holds for its challenge, ticket and answer only, under any key of a rotation", async (t) => {
  const challenge = 'challenge-0123456789abcdef'
  const ticket = mintTicket([KEY], user, SESSION, now).ticket
  const proof = accessProof([KEY, OLD], challenge, ticket, 'signed out')
  t.ok(isAccessProof([KEY], challenge, ticket, 'signed out', proof))
  t.ok(isAccessProof([OLD, KEY], challenge, ticket, 'signed out', proof), 'the key listed second on the bridge')
  t.notOk(isAccessProof([OLD], challenge, ticket, 'signed out', proof), 'not under a key that did not sign it')
  t.notOk(isAccessProof([KEY], 'challenge-0123456789abcdeg', ticket, 'signed out', proof), 'another challenge')
  t.notOk(isAccessProof([KEY], challenge, mintTicket([KEY], user, SESSION, now).ticket, 'signed out', proof), 'another ticket')
  t.notOk(isAccessProof([KEY], challenge, ticket, 'developer access revoked', proof), 'another reason')
  t.notOk(isAccessProof([KEY], challenge, ticket, null, proof), 'the other answer')
  t.notOk(isAccessProof([KEY], challenge, ticket, null, accessProof([KEY], challenge, ticket, 'admitted')), '"admitted" as a reason is no admission')
  t.notOk(isAccessProof([KEY], challenge, ticket, null, bridgeCredential([KEY])), "the bridge's credential is no proof")
})
