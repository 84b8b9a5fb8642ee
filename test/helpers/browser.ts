import { spawnSync } from 'node:child_process'
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import t, { type Test } from 'tap'
import type { Browser, Page } from 'playwright-core'
import { CHROMIUM, launchChromium, signedInPage } from './chromium.js'
import { freePort, startPlatform, tempDir, type RunningProcess } from './platform.js'
import { startBridge } from './terminal.js'

// The terminal page in a real browser (Debian's chromium through playwright-core), in front of a
// real platform and bridge: what the browser test files share.

// The DOM names the page functions below use (they run in the browser; tsconfig has no DOM lib).
declare const document: {
  getElementById(id: string): { textContent: string | null; hidden: boolean } | null
  querySelector(selector: string): { textContent: string | null } | null
}
/** The page's xterm.js Terminal (a top-level const of terminal.js), as far as the helpers read it. */
declare const term: { buffer: { active: { length: number; getLine(y: number): { translateToString(trim: boolean): string } | undefined } } }

export { CHROMIUM }

/** A platform and its bridge in front of one headless Chromium. */
export interface BrowserStack {
  dataDir: string
  origin: string
  bridge: RunningProcess
  platform: RunningProcess
  browser: Browser
}

/**
 * Start the file's platform, bridge and browser, stopped at the file's end. Without Chromium the
 * file plans no tests and ends here (.ci/run installs it).
 */
export async function startBrowserStack(): Promise<BrowserStack> {
  if (!existsSync(CHROMIUM)) {
    t.plan(0, `${CHROMIUM} is not installed (.ci/run installs it)`)
    process.exit(0)
  }
  const dataDir = tempDir()
  const port = await freePort()
  const origin = `http://127.0.0.1:${port}`
  const bridge = await startBridge({ DATA_DIR: dataDir, TERMINAL_TICKET_SECRET: undefined, PLATFORM_ORIGINS: origin })
  const platform = await startPlatform({ dataDir, env: { PORT: String(port), PLATFORM_ORIGINS: origin, TERMINAL_PORT: String(bridge.port) } })
  const browser = await launchChromium()
  t.teardown(async () => {
    await browser.close()
    await platform.stop()
    await bridge.stop()
  })
  return { dataDir, origin, bridge, platform, browser }
}

/**
 * A platform on a port of its own in front of a bridge of its own (`bridgeEnv` added to its
 * environment, run by `wrapper` when given), sharing the stack's data directory; both stopped at
 * the test's end.
 */
export async function ownPair(t: Test, stack: BrowserStack, bridgeEnv: Record<string, string | undefined> = {}, wrapper: string[] = []): Promise<{ at: string; bridge: RunningProcess; platform: RunningProcess }> {
  const port = await freePort()
  const at = `http://127.0.0.1:${port}`
  // PORT: where the bridge finds its platform when `bridgeEnv` turns access checks on.
  const bridge = await startBridge({ DATA_DIR: stack.dataDir, TERMINAL_TICKET_SECRET: undefined, PLATFORM_ORIGINS: at, PORT: String(port), ...bridgeEnv }, wrapper)
  t.teardown(() => bridge.stop())
  const platform = await startPlatform({ dataDir: stack.dataDir, env: { PORT: String(port), PLATFORM_ORIGINS: at, TERMINAL_PORT: String(bridge.port) } })
  t.teardown(() => platform.stop())
  return { at, bridge, platform }
}

/** A bash script, for a bridge's login shell (`SHELL`), in a directory of its own removed at the test's end. */
export function shellScript(t: Test, script: string): string {
  const dir = mkdtempSync('/tmp/playfield-test-shell-')
  chmodSync(dir, 0o755)
  const file = path.join(dir, 'shell')
  writeFileSync(file, `#!/bin/bash\n${script}`, { mode: 0o755 })
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return file
}

/** A browser page signed in as a fresh account (developer when `grant`) at `at`. */
export function signedIn(stack: BrowserStack, username: string, grant: boolean, at = stack.origin): Promise<Page> {
  return signedInPage(stack.browser, stack.dataDir, at, username, grant)
}

/** Hold the page's ticket requests until the returned release (a slow platform). */
export async function holdTickets(page: Page): Promise<() => void> {
  let release = (): void => undefined
  const released = new Promise<void>((resolve) => (release = resolve))
  await page.route('**/dev/terminal/ticket', async (route) => {
    await released
    await route.continue()
  })
  return release
}

/**
 * A developer's page at /dev/terminal on a slow platform: its ticket comes when the test releases
 * it, however slowly a loaded machine types what the test types first.
 */
export async function heldTicketPage(stack: BrowserStack, username: string, at = stack.origin): Promise<{ page: Page; release: () => void }> {
  const page = await signedIn(stack, username, true, at)
  const release = await holdTickets(page)
  await page.goto(`${at}/dev/terminal`)
  return { page, release }
}

/** A developer's page at `at` with its shell running: the sizes of the frames it sends, and how many WebSockets it opened. */
export async function shellPage(stack: BrowserStack, username: string, at = stack.origin): Promise<{ page: Page; sizes: number[]; sockets: () => number }> {
  const page = await signedIn(stack, username, true, at)
  const sizes: number[] = []
  let opened = 0
  page.on('websocket', (socket) => {
    opened++
    socket.on('framesent', (frame) => sizes.push(Buffer.byteLength(String(frame.payload))))
  })
  await page.goto(`${at}/dev/terminal`)
  await waitForStatus(page, /connected: shell [0-9]+$/)
  return { page, sizes, sockets: () => opened }
}

/** The page's status line, and the terminal's screen (the rows on view). */
export const status = (page: Page): Promise<string> => page.locator('#status').innerText()
export const screen = (page: Page): Promise<string> => page.locator('.xterm-rows').innerText()

/** The terminal's whole buffer, scrollback included, one line a row. */
export const buffer = (page: Page): Promise<string> =>
  page.evaluate(() => {
    const b = term.buffer.active
    return Array.from({ length: b.length }, (_, i) => b.getLine(i)?.translateToString(true) ?? '').join('\n')
  })

export async function waitForScreen(page: Page, pattern: RegExp, timeout = 15_000): Promise<void> {
  await page.waitForFunction((source) => new RegExp(source).test(document.querySelector('.xterm-rows')?.textContent ?? ''), pattern.source, { timeout })
}

export async function waitForStatus(page: Page, pattern: RegExp): Promise<void> {
  await page.waitForFunction((source) => new RegExp(source).test(document.getElementById('status')?.textContent ?? ''), pattern.source, { timeout: 15_000 })
}

/** Until the page offers its button (a shell ended, a connection closed, no ticket). */
export async function waitForOffer(page: Page): Promise<void> {
  await page.waitForFunction(() => document.getElementById('reconnect')?.hidden === false, undefined, { timeout: 15_000 })
}

/** Wait up to 10 s until the page's shell (its pid from the status line) has a child running `command`; whether it has. */
export async function shellRuns(page: Page, command: string): Promise<boolean> {
  const pid = /connected: shell ([0-9]+)/.exec(await page.locator('#status').innerText())![1]!
  const running = (): boolean => spawnSync('pgrep', ['-P', pid, '-x', command], { stdio: 'ignore' }).status === 0
  for (let tries = 0; !running() && tries < 100; tries++) await page.waitForTimeout(100)
  return running()
}
