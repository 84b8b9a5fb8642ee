import { chromium, type Browser, type Page } from 'playwright-core'
import { Client, runUsersOk } from './platform.js'

// What the browser tests and the slow-link benchmark share, without tap (the benchmark is no test).

export const CHROMIUM = '/usr/bin/chromium'

/** Debian's Chromium, headless, with nothing of its own going on in the background. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  })
}

/**
 * A page of a fresh browser context signed in as a new account registered at `at` (the platform
 * behind it, whose data directory is `dataDir`), made a developer when `grant`.
 */
export async function signedInPage(browser: Browser, dataDir: string, at: string, username: string, grant: boolean): Promise<Page> {
  const client = new Client(at, at)
  const res = await client.post('/api/auth/register', { username, password: 'correct horse battery' })
  if (res.status !== 200) throw new Error(`register: ${res.status}`)
  if (grant) await runUsersOk({ DATA_DIR: dataDir }, 'grant', username, 'developer')
  const context = await browser.newContext({ viewport: { width: 1000, height: 600 } })
  await context.addCookies([...client.cookies].map(([name, value]) => ({ name, value, url: at })))
  return context.newPage()
}
