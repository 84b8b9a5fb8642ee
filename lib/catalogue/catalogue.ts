import type { LeaderboardConfig } from '../backend/backend.js'

/** A leaderboard of the catalogue: its resolved configuration and the game that declares it. */
export interface CatalogueLeaderboard extends LeaderboardConfig {
  gameId: string
}

/** What the platform's other modules need of a loaded catalogue (lib/catalogue/ builds it). */
export interface Catalogue {
  /** Games by id: the manifest's fields as written. */
  readonly games: ReadonlyMap<string, { readonly id: string; readonly playUrl: string }>
  /** Every enabled leaderboard by id. */
  readonly leaderboards: ReadonlyMap<string, CatalogueLeaderboard>
}
