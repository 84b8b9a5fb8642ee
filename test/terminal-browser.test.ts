import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import path from 'node:path'
import t from 'tap'
import { chromium, type Browser, type Page } from 'playwright-core'
import { Client, freePort, PLATFORM_JS, ROOT, startPlatform, tempDir } from './helpers/platform.js'
import { startBridge } from './helpers/terminal.js'

// The few DOM names the page functions below use (they run in the browser; tsconfig has no DOM lib).
declare const document: {
  getElementById(id: string): { textContent: string | null } | null
  querySelector(selector: string): { textContent: string | null } | null
}
/** The page's xterm.js Terminal (a top-level const of terminal.js), as far as the tests read it. */
declare const term: {
  buffer: { active: { baseY: number; cursorY: number; getLine(y: number): { translateToString(trim: boolean): string } | undefined } }
  unicode: { activeVersion: string }
  paste(text: string): void
}

const CHROMIUM = '/usr/bin/chromium'
if (!existsSync(CHROMIUM)) {
  t.plan(0, `${CHROMIUM} is not installed (.ci/run installs it)`)
  process.exit(0)
}

const dataDir = tempDir()
const port = await freePort()
const origin = `http://127.0.0.1:${port}`
const bridge = await startBridge({ DATA_DIR: dataDir, TERMINAL_TICKET_SECRET: undefined, PLATFORM_ORIGINS: origin })
const platform = await startPlatform({ dataDir, env: { PORT: String(port), PLATFORM_ORIGINS: origin, TERMINAL_PORT: String(bridge.port) } })
const browser: Browser = await chromium.launch({
  executablePath: CHROMIUM,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
})
t.teardown(async () => {
  await browser.close()
  await platform.stop()
  await bridge.stop()
})

/** A browser page signed in as a fresh account (developer when `grant`). */
async function signedIn(username: string, grant: boolean): Promise<Page> {
  const client = new Client(origin, origin)
  const res = await client.post('/api/auth/register', { username, password: 'correct horse battery' })
  if (res.status !== 200) throw new Error(`register: ${res.status}`)
  if (grant) {
    execFileSync(process.execPath, [PLATFORM_JS, 'users', 'grant', username, 'developer'], {
      env: { PATH: process.env.PATH, DATA_DIR: dataDir, MANIFESTS_DIR: path.join(ROOT, 'manifests') },
      stdio: 'pipe',
    })
  }
  const context = await browser.newContext({ viewport: { width: 1000, height: 600 } })
  await context.addCookies([...client.cookies].map(([name, value]) => ({ name, value, url: origin })))
  return context.newPage()
}

const screen = (page: Page): Promise<string> => page.locator('.xterm-rows').innerText()

async function waitForScreen(page: Page, pattern: RegExp): Promise<void> {
  await page.waitForFunction((source) => new RegExp(source).test(document.querySelector('.xterm-rows')?.textContent ?? ''), pattern.source, { timeout: 15_000 })
}

t.test('an admitted user opens /dev/terminal, types a command and sees its output', async (t) => {
  const page = await signedIn('browser_dev', true)
  const errors: string[] = []
  page.on('pageerror', (err) => errors.push(err.message))
  page.on('console', (msg) => msg.type() === 'error' && errors.push(msg.text()))
  const res = await page.goto(`${origin}/dev/terminal`)
  t.equal(res?.status(), 200)
  await page.waitForFunction(() => /connected: shell [0-9]+/.test(document.getElementById('status')?.textContent ?? ''), undefined, { timeout: 15_000 })
  await page.locator('.xterm').click()
  await page.keyboard.type('echo browser-$((6*7))')
  await page.keyboard.press('Enter')
  await waitForScreen(page, /browser-42/)
  t.match(await screen(page), /browser-42/, 'the output is in the terminal')
  // The size the page sent follows the window.
  await page.keyboard.type('echo size=$(stty size | tr " " x)')
  await page.keyboard.press('Enter')
  await waitForScreen(page, /size=[0-9]+x[0-9]+/)
  const before = /size=([0-9]+)x([0-9]+)/.exec(await screen(page))!
  await page.setViewportSize({ width: 700, height: 400 })
  await page.waitForTimeout(300)
  await page.keyboard.type('echo resized=$(stty size | tr " " x)')
  await page.keyboard.press('Enter')
  await waitForScreen(page, /resized=[0-9]+x[0-9]+/)
  const after = /resized=([0-9]+)x([0-9]+)/.exec(await screen(page))!
  t.ok(Number(after[2]) < Number(before[2]) && Number(after[1]) < Number(before[1]), `rows and columns follow the window (${before[0]} -> ${after[0]})`)
  await page.keyboard.type('exit')
  await page.keyboard.press('Enter')
  await page.waitForFunction(() => /shell exited with code 0/.test(document.getElementById('status')?.textContent ?? ''), undefined, { timeout: 15_000 })
  t.equal(await page.locator('#reconnect').isVisible(), true, 'offers a new shell')
  t.same(errors, [], 'no page errors, no CSP violations')
  await page.context().close()
})

t.test('keys typed while the ticket and the connection are on their way reach the shell', async (t) => {
  const page = await signedIn('browser_early', true)
  // A slow platform: the ticket comes 800 ms after the page.
  await page.route('**/dev/terminal/ticket', async (route) => {
    await new Promise((r) => setTimeout(r, 800))
    await route.continue()
  })
  await page.goto(`${origin}/dev/terminal`)
  await page.locator('.xterm').click()
  t.match(await page.locator('#status').innerText(), /getting a ticket|connecting/, 'typed before the connection')
  await page.keyboard.type('echo early-$((2+3))')
  await page.keyboard.press('Enter')
  await waitForScreen(page, /early-5/)
  t.match(await screen(page), /early-5/, 'the whole line ran')
  await page.context().close()
})

t.test('a paste of 180,000 control characters goes out in frames the bridge takes: the connection stays', async (t) => {
  const page = await signedIn('browser_paste', true)
  const sizes: number[] = []
  page.on('websocket', (ws) => ws.on('framesent', (frame) => sizes.push(Buffer.byteLength(String(frame.payload)))))
  await page.goto(`${origin}/dev/terminal`)
  await page.waitForFunction(() => /connected: shell [0-9]+/.test(document.getElementById('status')?.textContent ?? ''), undefined, { timeout: 15_000 })
  // JSON writes each as \u0001, six bytes: in 256 K-character pieces that was a 1.5 MiB frame (1009).
  await page.evaluate(() => term.paste('\x01'.repeat(180000) + '\ud83d\ude00'.repeat(70000)))
  await page.waitForTimeout(1500)
  t.match(await page.locator('#status').innerText(), /^connected: shell [0-9]+$/, 'still connected')
  t.ok(sizes.length > 2 && Math.max(...sizes) <= 1024 * 1024, `every frame within 1 MiB (largest ${Math.max(...sizes)} bytes)`)
  await page.context().close()
})

t.test('an emoji is two columns wide on screen, as in the shell: the line being edited shows what the shell has', async (t) => {
  const page = await signedIn('browser_emoji', true)
  await page.goto(`${origin}/dev/terminal`)
  await page.waitForFunction(() => /connected: shell [0-9]+/.test(document.getElementById('status')?.textContent ?? ''), undefined, { timeout: 15_000 })
  await page.locator('.xterm').click()
  await page.keyboard.type('echo \u{1F600}\u{1F600}\u{1F600}abc')
  for (let i = 0; i < 4; i++) await page.keyboard.press('ArrowLeft')
  await page.keyboard.type('Z')
  // With one column per emoji on screen (xterm's Unicode 6 default), readline's cursor moves by
  // two landed elsewhere and the screen showed `echo 😀Z😀abc` for the line `echo 😀😀Z😀abc`.
  // Functions, not strings: the page's CSP refuses eval, which a polled string predicate needs.
  // (Each runs in the page, serialized: neither can call the other.)
  const cursorLine = (): string => {
    const b = term.buffer.active
    return b.getLine(b.baseY + b.cursorY)?.translateToString(true) ?? ''
  }
  await page.waitForFunction(() => {
    const b = term.buffer.active
    return (b.getLine(b.baseY + b.cursorY)?.translateToString(true) ?? '').includes('Z')
  }, undefined, { timeout: 15_000 })
  t.match(await page.evaluate(cursorLine), /echo \u{1F600}\u{1F600}Z\u{1F600}abc$/u, 'the screen shows the line the shell has')
  await page.keyboard.press('Enter')
  await waitForScreen(page, /^.*\n?\uD83D\uDE00\uD83D\uDE00Z\uD83D\uDE00abc/)
  t.equal(await page.evaluate(() => term.unicode.activeVersion), '11')
  await page.context().close()
})

t.test('a window wider than 1000 columns still gets a shell, 1000 columns wide', async (t) => {
  const page = await signedIn('browser_wide', true)
  await page.setViewportSize({ width: 12_000, height: 400 })
  await page.goto(`${origin}/dev/terminal`)
  await page.waitForFunction(() => /connected: shell [0-9]+/.test(document.getElementById('status')?.textContent ?? ''), undefined, { timeout: 15_000 })
  t.ok(Number(await page.evaluate('document.querySelector(".xterm-rows").getBoundingClientRect().width')) > 9000, 'the screen is that wide')
  await page.locator('.xterm').click()
  await page.keyboard.type('echo wide=$(stty size | tr " " x)')
  await page.keyboard.press('Enter')
  await waitForScreen(page, /wide=[0-9]+x[0-9]+/)
  t.match(await screen(page), /wide=[0-9]+x1000/, 'the shell has 1000 columns')
  await page.context().close()
})

t.test('a signed-in user without admission sees the 403 page', async (t) => {
  const page = await signedIn('browser_guest', false)
  const res = await page.goto(`${origin}/dev/terminal`)
  t.equal(res?.status(), 403)
  t.match(await page.locator('h1').innerText(), /403 Developer access required/)
  t.match(await page.locator('#reason').innerText(), /neither the developer nor the admin role/)
  t.equal(await page.locator('.xterm').count(), 0, 'no terminal')
  await page.context().close()
})
