/**
 * Begin `stop` at the first SIGTERM or SIGINT, once. Ctrl-C on `npm start` sends each server both:
 * SIGINT from the terminal to the whole process group, and SIGTERM from bin/start. A second signal
 * of the same kind gets the default action, so a second Ctrl-C on a server run alone ends it at once.
 */
export function onStop(stop: () => void): void {
  let stopping = false
  const begin = (): void => {
    if (stopping) return
    stopping = true
    stop()
  }
  process.once('SIGTERM', begin)
  process.once('SIGINT', begin)
}
