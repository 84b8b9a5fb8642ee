import type { PlatformConfig } from '../config.js'
import { checkDataDir, checkManifestsDir, checkScreenshotsDir } from '../config-checks.js'
import { checkEmbeddedDatabase } from '../backend/embedded/index.js'
import { runCheck } from '../catalogue/load.js'
import { loadTerminalAssets } from './terminal-html.js'

/**
 * `bin/platform check`: what the start would refuse, without starting. The directories (DATA_DIR
 * one this user may write or make), a database a newer version migrated (ConfigError), a page file
 * gone, and the catalogue (CatalogueInvalid); the summary line when all pass.
 */
export async function runCheckCommand(config: Readonly<PlatformConfig>): Promise<string> {
  checkManifestsDir(config.manifestsDir)
  checkDataDir(config.dataDir)
  checkScreenshotsDir(config.screenshotsDir)
  if (config.gameBackend === 'embedded') checkEmbeddedDatabase(config)
  loadTerminalAssets()
  return runCheck(config)
}
