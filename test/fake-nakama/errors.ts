/** A Nakama failure: a gRPC code and Nakama's message; the HTTP status follows grpc-gateway. */
export class FakeError extends Error {
  constructor(readonly code: number, message: string) {
    super(message)
  }
}

// grpc-gateway's HTTPStatusFromCode (runtime/errors.go), all 17 codes: OK, Canceled (499, nginx's
// "client closed request"), Unknown, InvalidArgument, DeadlineExceeded, NotFound, AlreadyExists,
// PermissionDenied, ResourceExhausted, FailedPrecondition, Aborted, OutOfRange, Unimplemented,
// Internal, Unavailable, DataLoss, Unauthenticated.
const STATUS = [200, 499, 500, 400, 504, 404, 409, 403, 429, 400, 409, 400, 501, 500, 503, 500, 401] as const

/** grpc-gateway's HTTPStatusFromCode (nakama-api.md §1.0); a code outside the 17 is 500, as there. */
export function httpStatus(code: number): number {
  return STATUS[code] ?? 500
}
