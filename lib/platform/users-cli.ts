import type { PlatformConfig } from '../config.js'

/** `bin/platform users …` (stub until the accounts issue lands). */
export async function runUsersCommand(config: Readonly<PlatformConfig>, args: string[]): Promise<number> {
  void config, args
  process.stderr.write('users: not available yet\n')
  return 1
}
