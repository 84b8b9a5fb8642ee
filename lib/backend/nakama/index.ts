import type { PlatformConfig } from '../../config.js'
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
export function createNakamaBackend(config: Readonly<PlatformConfig>, options: ClientOptions & { now?: () => number } = {}): Backend {
  if (!config.nakama) throw new Error('GAME_BACKEND=nakama needs NAKAMA_URL, NAKAMA_SERVER_KEY and NAKAMA_HTTP_KEY')
  const client = new NakamaClient(config.nakama, options)
  const accounts = new NakamaAccounts(client, options.now)
  const boards = new NakamaLeaderboards(client)
  // Node's fetch pool closes idle keep-alive sockets by itself; nothing else is held.
  return composeBackend('nakama', accounts, boards, async () => undefined)
}

/** The Nakama backend, once Nakama has taken NAKAMA_URL and the keys (ConfigError otherwise, CONTRACT §1). */
export async function openNakamaBackend(config: Readonly<PlatformConfig>): Promise<Backend> {
  // Quiet: a refusal here becomes the ConfigError's one line, which names the cause.
  if (config.nakama) await checkNakama(new NakamaClient(config.nakama, { log: () => undefined }), config.nakama)
  return createNakamaBackend(config)
}
