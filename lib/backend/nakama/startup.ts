import { randomUUID } from 'node:crypto'
import { ConfigError } from '../../config-error.js'
import type { NakamaConfig } from '../../config.js'
import { HttpError } from '../../http/errors.js'
import { NakamaError, NakamaMisconfigured, NakamaNotJson, type NakamaClient } from './client.js'

/** The nil user: Nakama's system user, never a player; the check needs only that the module answers with an `account` key. */
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
  const signIn = 'POST /v2/account/authenticate/custom'
  const first = await settle(client.request('POST', '/v2/account/authenticate/custom', {
    query: { create: 'false' }, body: { id: `playfield-check-${randomUUID()}` }, auth: 'server', idempotent: true,
  }))
  if (unreachable(first)) return
  if (first instanceof NakamaMisconfigured) throw configError(first, config)
  const notFound = first instanceof NakamaError && first.status === 404 && first.grpcCode === 5
  if (!notFound && !hasKey(first, 'token')) throw notNakama(config.url, signIn, first)

  const rpc = 'POST /v2/rpc/playfield_get_account'
  const second = await settle(client.rpc('playfield_get_account', { userId: NIL_USER }, true))
  if (unreachable(second)) return
  if (second instanceof NakamaMisconfigured) throw configError(second, config)
  if (!hasKey(second, 'account')) throw notNakama(config.url, rpc, second)
}

function settle(call: Promise<unknown>): Promise<unknown> {
  return call.catch((err: unknown) => (err instanceof Error ? err : new Error(String(err))))
}

function unreachable(answer: unknown): boolean {
  return answer instanceof HttpError && answer.status === 503 && !(answer instanceof NakamaMisconfigured)
}

function hasKey(answer: unknown, key: string): boolean {
  return !(answer instanceof Error) && answer !== null && typeof answer === 'object' && key in answer
}

function configError(err: NakamaMisconfigured, config: NakamaConfig): ConfigError {
  if (err.variable === 'NAKAMA_URL') {
    return new ConfigError(`NAKAMA_URL: ${JSON.stringify(config.url)} is a Nakama without the playfield module (${err.problem}); expected ${err.expected}`)
  }
  const key = err.variable === 'NAKAMA_SERVER_KEY' ? config.serverKey : config.httpKey
  return new ConfigError(`${err.variable}: (${key.length} characters, not shown) is refused by Nakama at ${config.url} (${err.problem}); expected ${err.expected}`)
}

function notNakama(url: string, request: string, answer: unknown): ConfigError {
  const got = answer instanceof NakamaError
    ? `HTTP ${answer.status}${answer.grpcCode ? ` code ${answer.grpcCode}` : ''} ${answer.message}`
    : answer instanceof NakamaNotJson ? `HTTP ${answer.status}, not JSON`
      : answer instanceof Error ? answer.message : 'an answer that is not Nakama\'s'
  return new ConfigError(`NAKAMA_URL: ${JSON.stringify(url)} does not answer as Nakama (${request}: ${got}); expected the URL of Nakama's HTTP API, such as http://127.0.0.1:7350`)
}
