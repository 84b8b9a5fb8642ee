import type http from 'node:http'
import type { PlatformConfig } from '../config.js'

/** Forward `/terminal-ws/` upgrades to the bridge (stub until the terminal issue lands). */
export function attachTerminalProxy(server: http.Server, config: Readonly<PlatformConfig>): void {
  void server, config
}
