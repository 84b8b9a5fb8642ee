import { randomUUID } from 'node:crypto'
import { ConfigError } from '../../config-error.js'
import type { NakamaConfig } from '../../config.js'
import { HttpError } from '../../http/errors.js'
import { AccountAnswer, SessionAnswer } from './answers.js'
import type { NakamaClient } from './client.js'
import { NakamaError, NakamaMisconfigured, NakamaUnexpected } from './errors.js'

/** The nil user: Nakama's system user, never a player; the check needs only that the module answers an account (or null). */
const NIL_USER = '00000000-0000-0000-0000-000000000000'

/**
 * Check NAKAMA_URL, NAKAMA_SERVER_KEY and NAKAMA_HTTP_KEY against Nakama before serving, so a bad
 * one is a configuration error (one line, exit 2, CONTRACT §1). Two calls that change nothing:
 * authenticate/custom with create=false and a random id (Nakama's 404 "User account not found."
 * means it took the server key; no account is ever created), then the module's read-only
 * playfield_get_account with the HTTP key. An unreachable Nakama is not a configuration error: the
 * platform starts anyway and retries (README, "Errors").
 */
export async function checkNakama(client: NakamaClient, config: NakamaConfig): Promise<void> {
  const first = await settle(client.request('POST', '/v2/account/authenticate/custom', {
    query: { create: 'false' }, body: { id: `playfield-check-${randomUUID()}` }, auth: 'server', idempotent: true,
    answer: SessionAnswer, expected: (refusal) => refusal.status === 404 && refusal.grpcCode === 5,
  }))
  if (!answered(first, config)) return
  answered(await settle(client.rpc('playfield_get_account', { userId: NIL_USER }, AccountAnswer, { idempotent: true })), config)
}

function settle(call: Promise<unknown>): Promise<unknown> {
  return call.catch((err: unknown) => (err instanceof Error ? err : new Error(String(err))))
}

/**
 * Whether Nakama answered as itself with the platform's settings (a refusal the check expects, or
 * an answer of the expected shape): false when it could not be reached; else the ConfigError.
 */
function answered(answer: unknown, config: NakamaConfig): boolean {
  if (answer instanceof NakamaMisconfigured) throw configError(answer, config)
  if (answer instanceof NakamaUnexpected) throw notNakama(config.url, answer)
  if (answer instanceof HttpError && answer.status === 503) return false
  if (answer instanceof Error && !(answer instanceof NakamaError)) throw answer
  return true
}

function configError(err: NakamaMisconfigured, config: NakamaConfig): ConfigError {
  if (err.variable === 'NAKAMA_URL') {
    return new ConfigError(`NAKAMA_URL: ${JSON.stringify(config.url)} is a Nakama without the playfield module (${err.problem}); expected ${err.expected}`)
  }
  const key = err.variable === 'NAKAMA_SERVER_KEY' ? config.serverKey : config.httpKey
  return new ConfigError(`${err.variable}: (${key.length} characters, not shown) is refused by Nakama at ${config.url} (${err.problem}); expected ${err.expected}`)
}

function notNakama(url: string, answer: NakamaUnexpected): ConfigError {
  // A refusal reads `HTTP 404 Not Found`, a body `HTTP 200, not JSON`.
  const got = `HTTP ${answer.answerStatus}${answer.answerStatus >= 400 ? ' ' : ', '}${answer.problem}`
  return new ConfigError(`NAKAMA_URL: ${JSON.stringify(url)} does not answer as Nakama (${answer.request.replace(/\?.*/, '')}: ${got}); expected the URL of Nakama's HTTP API, such as http://127.0.0.1:7350`)
}
