import { HttpError } from '../../http/errors.js'

/** How a request authenticates (nakama-api.md §1.0): server key, runtime HTTP key, or a session. */
export type NakamaAuth = 'server' | 'http' | { bearer: string }

/** What users read whenever the game backend fails them, whatever the cause (that goes to the log). */
const UNAVAILABLE = 'the game backend is unavailable; try again shortly'

/** A refusal of Nakama that the caller said it maps (`expected`): its HTTP status, gRPC code and message. */
export class NakamaError extends Error {
  override name = 'NakamaError'
  constructor(
    readonly status: number,
    readonly grpcCode: number,
    message: string,
  ) {
    super(message)
  }
}

/**
 * An answer the platform does not expect (a status no caller maps, a body that is not JSON, too
 * large, or of the wrong shape): whatever answered is not Nakama working as the module promises.
 * Users get 503 BACKEND_UNAVAILABLE, as for an unreachable Nakama; the cause is logged where it is thrown.
 */
export class NakamaUnexpected extends HttpError {
  constructor(
    readonly request: string,
    readonly answerStatus: number,
    readonly problem: string,
  ) {
    super(503, 'BACKEND_UNAVAILABLE', UNAVAILABLE)
  }
}

/** The variable an operator must fix, and what it must be. */
export const FIXES = {
  NAKAMA_SERVER_KEY: "Nakama's socket.server_key",
  NAKAMA_HTTP_KEY: "Nakama's runtime.http_key",
  NAKAMA_URL: 'a Nakama running nakama/modules/playfield.js (README: Installing the module)',
} as const

/**
 * Nakama refused the platform's own key, or runs without the module: nothing a user did. Users get
 * 503 BACKEND_UNAVAILABLE (never INVALID_CREDENTIALS or INTERNAL); the cause is logged where it is thrown.
 */
export class NakamaMisconfigured extends HttpError {
  constructor(
    readonly variable: keyof typeof FIXES,
    readonly problem: string,
  ) {
    super(503, 'BACKEND_UNAVAILABLE', UNAVAILABLE)
  }

  /** What the variable must be. */
  get expected(): string {
    return FIXES[this.variable]
  }
}

/** The contract's answer whenever Nakama cannot be reached or fails on its side (CONTRACT §4). */
export function backendUnavailable(): HttpError {
  return new HttpError(503, 'BACKEND_UNAVAILABLE', UNAVAILABLE)
}

/**
 * Which variable is wrong when Nakama refuses the platform itself (nakama-api.md §1.0, §1.9): the
 * server key on sign-in calls (not a user's wrong password: 'Invalid credentials.'), the HTTP key
 * on RPCs, or the URL of a Nakama without the module ('RPC function not found').
 */
export function misconfigured(auth: NakamaAuth, path: string, status: number, message: string): keyof typeof FIXES | null {
  if (status === 401 && auth === 'server' && message.startsWith('Server key')) return 'NAKAMA_SERVER_KEY'
  if (status === 401 && auth === 'http') return 'NAKAMA_HTTP_KEY'
  if (status === 404 && path.startsWith('/v2/rpc/') && message === 'RPC function not found') return 'NAKAMA_URL'
  return null
}
