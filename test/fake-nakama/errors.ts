/** A Nakama failure: a gRPC code and Nakama's message; the HTTP status follows grpc-gateway. */
export class FakeError extends Error {
  constructor(readonly code: number, message: string) {
    super(message)
  }
}

const STATUS: Record<number, number> = { 3: 400, 5: 404, 6: 409, 7: 403, 8: 429, 9: 400, 13: 500, 14: 503, 16: 401 }

/** grpc-gateway's HTTPStatusFromCode for the codes Nakama uses (nakama-api.md §1.0). */
export function httpStatus(code: number): number {
  return STATUS[code] ?? 500
}
