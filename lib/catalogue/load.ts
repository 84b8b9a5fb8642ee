import type { PlatformConfig } from '../config.js'
import type { Catalogue } from './catalogue.js'

/** The catalogue in force, replaced on reload only by a valid one (stub until the catalogue lands). */
export class CatalogueHolder {
  #current: Catalogue
  private constructor(current: Catalogue) {
    this.#current = current
  }

  /** Load MANIFESTS_DIR; exits 1 with one line per problem when invalid. */
  static async open(config: Readonly<PlatformConfig>): Promise<CatalogueHolder> {
    void config
    return new CatalogueHolder({ games: new Map(), leaderboards: new Map() })
  }

  current(): Catalogue {
    return this.#current
  }

  /** Reload; keep the old catalogue and log the problems when the new one is invalid. */
  async reload(): Promise<boolean> {
    return false
  }
}

/** `bin/platform check`: validate without starting; 0 when valid, 1 otherwise. */
export async function runCheck(config: Readonly<PlatformConfig>): Promise<number> {
  void config
  return 0
}
