import { isoNow, queueLine } from '../log.js'

/** What the access log says of a request: the server's Exchange. */
interface LoggedRequest {
  /** `performance.now()` when the request arrived. */
  readonly started: number
  readonly requestId: string
  readonly method: string
  readonly pathname: string
  readonly ip: string
  /** A log of its own (tests); without one the line goes to stdout. */
  readonly log: ((entry: Record<string, unknown>) => void) | undefined
}

/** The access log's status of a request whose client closed the connection before the answer was out. */
export const CLIENT_CLOSED = 499

/** '00' to '99': the fraction of the access log's milliseconds. */
const TWO_DIGITS = Array.from({ length: 100 }, (_, i) => String(i).padStart(2, '0'))

/** Write the access-log line of a request that is over, answered with `status`. */
export function logRequest(ex: LoggedRequest, status: number): void {
  // An integer, so the remainder below is integer arithmetic, not a call to fmod.
  const hundredths = Math.round((performance.now() - ex.started) * 100) | 0
  if (ex.log) {
    ex.log({ event: 'http.request', id: ex.requestId, method: ex.method, path: ex.pathname, status, ms: hundredths / 100, ip: ex.ip })
    return
  }
  // The same line logLine would write, built without an intermediate object (it is written for
  // every request). Nothing in it needs escaping: the method is an HTTP token, the address an IP
  // literal (llhttp and isIP admit nothing else), and the path printable ASCII without quotes or
  // backslashes (pathnameOf's plain paths, or URL's percent-encoded ones). The milliseconds are
  // written from integers: formatting the double cost a tenth of a microsecond per request.
  queueLine(
    `{"time":"${isoNow()}","event":"http.request","id":"${ex.requestId}","method":"${ex.method}",` +
      `"path":"${ex.pathname}","status":${status},"ms":${(hundredths / 100) | 0}.${TWO_DIGITS[hundredths % 100]},"ip":"${ex.ip}"}\n`,
  )
}
