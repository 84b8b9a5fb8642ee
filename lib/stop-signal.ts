/**
 * Begin `stop` at the first of `signals` (SIGTERM or SIGINT unless told), once. Ctrl-C on `npm
 * start` sends each server both: SIGINT from the terminal to the whole process group, and SIGTERM
 * from bin/start. A second signal of the same kind gets the default action, so a second Ctrl-C on
 * a server run alone ends it at once.
 */
export function onStop(stop: () => void, signals: NodeJS.Signals[] = ['SIGTERM', 'SIGINT']): void {
  let stopping = false
  const begin = (): void => {
    if (stopping) return
    stopping = true
    stop()
  }
  for (const signal of signals) process.once(signal, begin)
}
