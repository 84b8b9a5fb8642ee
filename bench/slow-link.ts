/**
 * npm run bench:slow-link — the developer terminal through a slow link: Chromium opens
 * /dev/terminal through an emulated link (bench/link.ts: each direction's bandwidth and one-way
 * delay) in front of the platform, floods `yes` for BENCH_FLOOD_S seconds (default 10) and
 * presses Ctrl-C. For each link, in BENCH_ROUNDS rounds (default 3), medians reported:
 *   - link use: the bytes the link carried to the browser a second during the flood, against what
 *     the same link carries for a plain TCP sender, measured in the same run (the limit);
 *   - Ctrl-C to prompt: from the key to the prompt on the page's screen, and the characters the
 *     page received meanwhile.
 * The ack window (lib/bridge/ack-window.ts) is what these read: it holds about half a second of
 * the client's pace beyond a round trip, so the link should stay full (link use near 1) while
 * Ctrl-C brings the prompt back within about half a second and two round trips.
 * BENCH_LINKS picks links by name (e.g. BENCH_LINKS=1M-150). Needs /usr/bin/chromium.
 */
import { existsSync } from 'node:fs'
import type { Page } from 'playwright-core'
import { CHROMIUM, launchChromium, signedInPage } from '../test/helpers/chromium.js'
import { freePort, startPlatform, tempDir } from '../test/helpers/platform.js'
import { startBridge } from '../test/helpers/terminal.js'
import { Link, type LinkOptions, measureLink } from './link.js'

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const FLOOD_S = Number(process.env.BENCH_FLOOD_S ?? 10)
/** The flood runs this long before it is measured: the window grows from its least first. */
const SETTLE_MS = 2000

const LINKS: (LinkOptions & { name: string; label: string })[] = [
  { name: '1M-150', label: '1 Mbit/s, 150 ms round trip', bitsPerSecond: 1_000_000, delayMs: 75 },
  { name: '1M-300', label: '1 Mbit/s, 300 ms round trip', bitsPerSecond: 1_000_000, delayMs: 150 },
  { name: '256k-150', label: '256 kbit/s, 150 ms round trip', bitsPerSecond: 256_000, delayMs: 75 },
  { name: '10M-300', label: '10 Mbit/s, 300 ms round trip', bitsPerSecond: 10_000_000, delayMs: 150 },
]

// The page's globals, as far as the benchmark reads them (they run in the browser).
declare const term: {
  write(data: string, done?: () => void): void
  buffer: { active: { baseY: number; cursorY: number; getLine(y: number): { translateToString(trim: boolean): string } | undefined } }
}
declare const window: { received: number }
declare const document: { getElementById(id: string): { textContent: string | null } | null }

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!

if (!existsSync(CHROMIUM)) {
  console.error(`${CHROMIUM} is not installed (apt-get install chromium, as .ci/run does)`)
  process.exit(1)
}
const picked = process.env.BENCH_LINKS?.split(',')
const links = LINKS.filter((l) => !picked || picked.includes(l.name))

// One platform and bridge, reached through one link whose options each scenario sets.
const dataDir = tempDir('playfield-bench-')
const linkPort = await freePort()
const origin = `http://127.0.0.1:${linkPort}`
const bridge = await startBridge({ DATA_DIR: dataDir, TERMINAL_TICKET_SECRET: undefined, PLATFORM_ORIGINS: origin })
const platform = await startPlatform({ dataDir, env: { PLATFORM_ORIGINS: origin, TERMINAL_PORT: String(bridge.port) } })
const options: LinkOptions = { bitsPerSecond: 1_000_000, delayMs: 75 }
const link = await Link.open(platform.port, options, linkPort)
const browser = await launchChromium()

const cursorLine = (page: Page): Promise<string> =>
  page.evaluate(() => {
    const b = term.buffer.active
    return b.getLine(b.baseY + b.cursorY)?.translateToString(true) ?? ''
  })
const received = (page: Page): Promise<number> => page.evaluate(() => window.received)

/** A page with its shell running through the link, counting the characters handed to the terminal. */
let accounts = 0
async function openShell(): Promise<Page> {
  const page = await signedInPage(browser, dataDir, origin, `benchdev${++accounts}`, true)
  await page.goto(`${origin}/dev/terminal`)
  await page.waitForFunction(() => /connected: shell [0-9]+$/.test(document.getElementById('status')?.textContent ?? ''), undefined, { timeout: 60_000 })
  await page.evaluate(() => {
    window.received = 0
    const write = term.write.bind(term)
    term.write = (data, done) => {
      window.received += data.length
      write(data, done)
    }
  })
  for (let tries = 0; !/\$ $/.test(await cursorLine(page)); tries++) {
    if (tries > 1000) throw new Error('no prompt')
    await sleep(10)
  }
  return page
}

/** One flood and its Ctrl-C: link use (bytes a second to the browser) and the Ctrl-C figures. */
async function round(): Promise<{ rate: number; ctrlC: number; drained: number }> {
  const page = await openShell()
  await page.keyboard.type('yes\n')
  await sleep(SETTLE_MS)
  const from = link.delivered()
  const start = performance.now()
  await sleep(FLOOD_S * 1000)
  const rate = ((link.delivered() - from) * 1000) / (performance.now() - start)
  const before = await received(page)
  const pressed = performance.now()
  await page.keyboard.press('Control+c')
  let ctrlC = Infinity
  while (performance.now() - pressed < 120_000) {
    if (/\$ $/.test(await cursorLine(page))) {
      ctrlC = performance.now() - pressed
      break
    }
    await sleep(10)
  }
  const drained = (await received(page)) - before
  await page.context().close()
  return { rate, ctrlC, drained }
}

console.log(`slow-link benchmark: ${ROUNDS} rounds per link, \`yes\` for ${FLOOD_S} s (after ${SETTLE_MS / 1000} s) in Chromium's /dev/terminal`)
for (const l of links) {
  options.bitsPerSecond = l.bitsPerSecond
  options.delayMs = l.delayMs
  const limit = await measureLink({ bitsPerSecond: l.bitsPerSecond, delayMs: l.delayMs })
  const rounds = []
  for (let i = 0; i < ROUNDS; i++) rounds.push(await round())
  const rate = median(rounds.map((r) => r.rate))
  const ctrlC = rounds.map((r) => r.ctrlC)
  console.log(`\n${l.label} (${l.name}): a plain TCP sender gets ${(limit / 1024).toFixed(1)} KiB/s through it`)
  console.log(`  link use during the flood: ${(rate / limit).toFixed(2)} (${(rate / 1024).toFixed(1)} KiB/s; rounds ${rounds.map((r) => (r.rate / limit).toFixed(2)).join(', ')})`)
  console.log(`  Ctrl-C to prompt: ${Math.round(median(ctrlC))} ms (rounds ${ctrlC.map((ms) => Math.round(ms)).join(', ')}); characters received meanwhile ${median(rounds.map((r) => r.drained))}`)
}

await browser.close()
await link.close()
await platform.stop()
await bridge.stop()
