import type { LeaderboardConfig } from '../backend/backend.js'
import type { Manifest } from './manifest.js'
import type { Representation } from './serialize.js'

/** A leaderboard of the catalogue: its resolved configuration and the game that declares it. */
export interface CatalogueLeaderboard extends LeaderboardConfig {
  gameId: string
}

/** A game as served: its manifest as written, with `verifiedPlayCapture` always present. */
export type Game = Readonly<Manifest> & { readonly verifiedPlayCapture: unknown }

/** What the platform's other modules need of a loaded catalogue (lib/catalogue/ builds it). */
export interface Catalogue {
  /** Games by id, in file-name order: the manifest's fields as written. */
  readonly games: ReadonlyMap<string, Game>
  /** Every enabled leaderboard by id (a board shared by games with one config appears once). */
  readonly leaderboards: ReadonlyMap<string, CatalogueLeaderboard>
  /** The body of GET /api/games, serialized at load. */
  readonly list: Representation
  /** The body of GET /api/games/{id} as true at `now` (nextResetAt); undefined for an unknown id. */
  detail(id: string, now: number): Representation | undefined
}
