import type { NakamaConfig } from '../../config.js'
import { composeBackend, type Backend } from '../backend.js'
import { NakamaAccounts } from './accounts.js'
import { NakamaClient, type ClientOptions } from './client.js'
import { NakamaLeaderboards } from './leaderboards.js'
import { checkNakama } from './startup.js'

/**
 * The Nakama game backend (GAME_BACKEND=nakama): accounts, passwords and sessions in Nakama,
 * leaderboards in Nakama, roles, buckets, launches and logouts in Nakama storage through the
 * module nakama/modules/playfield.js. The platform keeps nothing, so instances scale out.
 */
export function createNakamaBackend(nakama: Readonly<NakamaConfig>, options: ClientOptions & { now?: () => number } = {}): Backend {
  const client = new NakamaClient(nakama, options)
  const accounts = new NakamaAccounts(client, options.now)
  const boards = new NakamaLeaderboards(client)
  // Node's fetch pool closes idle keep-alive sockets by itself; nothing else is held.
  return composeBackend('nakama', accounts, boards, async () => undefined)
}

/** The Nakama backend, once Nakama has taken NAKAMA_URL and the keys (ConfigError otherwise, CONTRACT §1). */
export async function openNakamaBackend(nakama: Readonly<NakamaConfig>): Promise<Backend> {
  // Quiet: a refusal here becomes the ConfigError's one line, which names the cause.
  await checkNakama(new NakamaClient(nakama, { log: () => undefined }), nakama)
  return createNakamaBackend(nakama)
}
