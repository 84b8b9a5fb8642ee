/**
 * SIGHUP (systemd's reload) from the moment this module is evaluated: without a handler the
 * signal ends the process, and node takes a few hundred milliseconds to load the platform's code.
 * bin/platform preloads it (`node --import`), so the window shrinks to node's own start; a
 * signal that comes before the server can reload is kept, and handed on once it can.
 * A module with an effect on purpose: it has no imports, so it runs before anything else loads.
 */
let handler: (() => void) | null = null
let pending = false

process.on('SIGHUP', () => {
  if (handler) handler()
  else pending = true
})

/** From now on SIGHUP calls `reload`; a signal that came before is handed on at once. */
export function onReload(reload: () => void): void {
  handler = reload
  if (pending) {
    pending = false
    reload()
  }
}
