/**
 * Begin `stop` at the first of `signals` (SIGTERM or SIGINT unless told), once. A repeated SIGTERM
 * (or SIGHUP) asks for nothing more and is ignored: `timeout` and a supervisor that signal a whole
 * process group reach each server of `npm start` twice, once directly and once through bin/start.
 * A second SIGINT, a second Ctrl-C, gets the default action and ends the process at once; Ctrl-C
 * on `npm start` sends each server one SIGINT (from the terminal, to the whole group) and one
 * SIGTERM (from bin/start), so it takes a second Ctrl-C there too.
 */
export function onStop(stop: () => void, signals: NodeJS.Signals[] = ['SIGTERM', 'SIGINT']): void {
  let stopping = false
  const begin = (): void => {
    if (stopping) return
    stopping = true
    stop()
  }
  for (const signal of signals) {
    if (signal === 'SIGINT') process.once(signal, begin)
    else process.on(signal, begin)
  }
}
