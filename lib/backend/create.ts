import type { PlatformConfig } from '../config.js'
import type { Backend } from './backend.js'
import { createEmbeddedBackend } from './embedded/index.js'
import { openNakamaBackend } from './nakama/index.js'

/**
 * The configured game backend: embedded (SQLite in DATA_DIR) or Nakama (NAKAMA_URL, checked first).
 * Apart from backend.ts, which both backends import for the interface: there it would be a cycle.
 */
export async function createBackend(config: Readonly<PlatformConfig>): Promise<Backend> {
  // loadPlatformConfig sets `nakama` exactly when GAME_BACKEND=nakama.
  if (config.nakama) return openNakamaBackend(config.nakama)
  return createEmbeddedBackend(config)
}
