/** One JSON object per line on stdout: the access log and every event of both processes. */

// Lines written in one turn of the event loop leave in one write: a write per request cost the
// catalogue benchmark a fifth of its throughput. 'exit' flushes what is left (stdout is synchronous
// for files and pipes on Linux).
let pending: string[] = []
let flushScheduled = false
let isoMs = 0
let iso = ''

function flushLog(): void {
  flushScheduled = false
  if (pending.length === 0) return
  const text = pending.join('')
  pending = []
  process.stdout.write(text)
}
process.on('exit', flushLog)

/** The current time as ISO 8601, computed once per millisecond. */
export function isoNow(): string {
  const now = Date.now()
  if (now !== isoMs) {
    isoMs = now
    iso = new Date(now).toISOString()
  }
  return iso
}

/** Queue one finished line (ending in a newline) for the next write. */
export function queueLine(line: string): void {
  pending.push(line)
  if (!flushScheduled) {
    flushScheduled = true
    setImmediate(flushLog)
  }
}

/** Write one JSON line to stdout (batched per event-loop turn, flushed at exit). */
export function logLine(entry: Record<string, unknown>): void {
  queueLine(JSON.stringify({ time: isoNow(), ...entry }) + '\n')
}

/**
 * Write one JSON line with exactly the fields given, no `time` added: for a line whose fields a
 * contract names (CONTRACT §6's `terminal.session`, which carries its own `endedAt`).
 */
export function logExactLine(entry: Record<string, unknown>): void {
  queueLine(JSON.stringify(entry) + '\n')
}

/** Line breaks and other control characters, which a name, a file name or a key may hold. */
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g
const ESCAPES: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' }

/** `text` for a line of plain-text output (stderr): its control characters escaped, so it stays one line. */
export function escapeControls(text: string): string {
  return text.replace(CONTROL, (c) => ESCAPES[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
}

/** An error's message for a log line, or the thrown value as text when it is not an Error. */
export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}
