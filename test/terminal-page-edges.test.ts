import t from 'tap'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Page } from 'playwright-core'
import { runUsersOk } from './helpers/platform.js'
import { buffer, heldTicketPage, holdTickets, ownPair, screen, shellPage, shellRuns, shellScript, signedIn, startBrowserStack, status, waitForOffer, waitForScreen, waitForStatus } from './helpers/browser.js'
import { NO_FORKS, until } from './helpers/terminal.js'

// The terminal page's promises at its edges (README "The developer terminal"): close reasons, the
// offered button and what it does, exit codes, limits on what is sent and what waits for the shell.
// Real browser, real platform and bridge, as in terminal-browser.test.ts.

// The few DOM names the page functions below use (they run in the browser; tsconfig has no DOM lib).
declare const document: {
  getElementById(id: string): { textContent: string | null; hidden: boolean; className: string; click(): void } | null
  querySelector(selector: string): { textContent: string | null } | null
  querySelectorAll(selector: string): ArrayLike<{ textContent: string | null }>
  activeElement: { id: string; className: string } | null
}
/** The page's WebSocket to the bridge (a top-level `let` of terminal.js). */
declare const ws: { close(): void; send(data: string): void } | null
declare function getComputedStyle(element: unknown): { color: string; backgroundColor: string }
/** The page's xterm.js Terminal (a top-level const of terminal.js), as far as the tests read it. */
declare const term: {
  buffer: { active: { length: number; getLine(y: number): { translateToString(trim: boolean): string } | undefined } }
  cols: number
  rows: number
  input(data: string, wasUserInput?: boolean): void
  paste(text: string): void
  write(data: string, callback?: () => void): void
  options: { screenReaderMode: boolean }
}

const stack = await startBrowserStack()
const { browser, dataDir, origin } = stack

/**
 * Output characters the page's sockets receive, and those it acknowledges (CONTRACT §6: `ack`
 * counts output characters), counted from the page's next WebSocket on.
 */
function countAcks(page: Page): { output: number; acked: number } {
  const counts = { output: 0, acked: 0 }
  page.on('websocket', (socket) => {
    socket.on('framereceived', (frame) => {
      const f = JSON.parse(String(frame.payload)) as { type: string; data?: string }
      if (f.type === 'output') counts.output += f.data!.length
    })
    socket.on('framesent', (frame) => {
      const f = JSON.parse(String(frame.payload)) as { type: string; bytes?: number }
      if (f.type === 'ack') counts.acked += f.bytes!
    })
  })
  return counts
}

/** What has the keyboard: the focused element's id, or its class (xterm's textarea has no id). */
const focusOf = (page: Page): Promise<string | undefined> => page.evaluate(() => document.activeElement?.id || document.activeElement?.className)

const LIMIT_REACHED = 'connection limit reached: too many terminals are open; close one, then reconnect'
/** What the page adds when a connection with a running shell ends: the bridge ended that shell. */
const SHELL_ENDED = '; the shell and its jobs were ended, and Reconnect starts a new one'

t.test('a connection past the bridge\'s limit (1013) is shown as the limit reached; Reconnect opens a shell once one is closed', async (t) => {
  const own = await ownPair(t, stack, { TERMINAL_MAX_CONN: '1' })
  const { page: first } = await shellPage(stack, 'edge_limit_a', own.at)
  const second = await signedIn(stack, 'edge_limit_b', true, own.at)
  await second.goto(`${own.at}/dev/terminal`)
  await waitForOffer(second)
  t.equal(await status(second), LIMIT_REACHED, 'the status line says why, without the bridge\'s own reason after it')
  t.equal(await second.locator('#status').getAttribute('class'), 'error')
  t.match(await screen(second), /\[connection limit reached: too many terminals are open/, 'and the terminal says it')
  t.equal(await second.locator('#reconnect').innerText(), 'Reconnect')
  // Close the first terminal; once the bridge counts no connection, Reconnect gets a shell.
  await first.context().close()
  await until(async () => ((await (await fetch(`${own.bridge.url}/`)).json()) as { connections: number }).connections === 0, 15_000, 'the first connection to end')
  await second.locator('#reconnect').click()
  await waitForStatus(second, /^connected: shell [0-9]+$/)
  t.equal(await second.locator('#reconnect').isHidden(), true, 'the button is gone while the shell runs')
  // The bridge shutting down (SIGTERM: 1001) is said as such, as an error.
  await own.bridge.stop()
  await waitForOffer(second)
  t.equal(await status(second), `the terminal bridge is shutting down${SHELL_ENDED}`, 'without the bridge\'s own reason, which says it again; and what became of the shell')
  t.equal(await second.locator('#status').getAttribute('class'), 'error')
  await second.context().close()
})

t.test('a terminal whose developer access is revoked is closed (1008), and the page says why', async (t) => {
  const own = await ownPair(t, stack, { TERMINAL_ACCESS_CHECK_S: '1' })
  const { page } = await shellPage(stack, 'edge_access_ended', own.at)
  await runUsersOk({ DATA_DIR: stack.dataDir }, 'revoke', 'edge_access_ended', 'developer')
  await waitForOffer(page)
  t.equal(await status(page), `access ended: developer access revoked${SHELL_ENDED}`, "the bridge's reason, after the page's own words only once")
  t.equal(await page.locator('#status').getAttribute('class'), 'error')
  t.match(await screen(page), /\[access ended; the shell and its jobs were ended/, 'and the terminal says it')
  t.equal(await page.locator('#reconnect').innerText(), 'Reconnect', 'Reconnect offered (which then meets the gate: "no longer admitted, reconnecting" below)')
  await page.context().close()
})

t.test('the platform stopping is a lost connection, and Reconnect then says the platform cannot be reached', async (t) => {
  const own = await ownPair(t, stack)
  const { page } = await shellPage(stack, 'edge_platform_gone', own.at)
  // And a signed-out page: its form, loaded before the platform stopped.
  const signedOut = await (await browser.newContext()).newPage()
  t.equal((await signedOut.goto(`${own.at}/dev/terminal`))?.status(), 401)
  await own.platform.stop('SIGKILL')
  await waitForOffer(page)
  t.equal(await status(page), `connection lost (the terminal bridge or the platform stopped, or the network failed)${SHELL_ENDED}`)
  t.match(await screen(page), /\[connection lost/, 'and the terminal says it')
  await page.locator('#reconnect').click()
  await waitForStatus(page, /^the platform cannot be reached$/)
  await waitForOffer(page)
  t.equal(await page.locator('#reconnect').innerText(), 'Reconnect', 'another try is offered')
  t.equal(await focusOf(page), 'reconnect', 'and it has the keyboard')
  await page.context().close()
  await signedOut.locator('input[name=username]').fill('edge_platform_gone')
  await signedOut.locator('input[name=password]').fill('correct horse battery')
  await signedOut.locator('button[value=login]').click()
  await signedOut.waitForFunction(() => (document.getElementById('problem')?.textContent ?? '') !== '', undefined, { timeout: 15_000 })
  t.match(await signedOut.locator('#problem').innerText(), /^the platform cannot be reached \(.+\)$/, 'the form says the platform cannot be reached')
  await signedOut.context().close()
})

t.test('with the keyboard alone: Enter on Reconnect, then keys typed while the new ticket is on its way run in the new shell', async (t) => {
  const { page } = await shellPage(stack, 'edge_reconnect_keys')
  const release = await holdTickets(page)
  await page.evaluate(() => ws?.close())
  await waitForOffer(page)
  t.equal(await focusOf(page), 'reconnect', 'the button has the keyboard')
  await page.keyboard.press('Enter')
  await waitForStatus(page, /^getting a ticket/)
  t.equal(await page.locator('#reconnect').isHidden(), true, 'the button is gone')
  await page.keyboard.type('echo back-$((5+5))')
  await page.keyboard.press('Enter')
  release()
  await waitForScreen(page, /back-10/)
  t.match(await status(page), /^connected: shell [0-9]+$/)
  await page.context().close()
})

t.test('with the keyboard alone after an exit: Tab leaves the terminal, which takes no keys then, and comes back to New shell', async (t) => {
  const { page } = await shellPage(stack, 'edge_exit_tab')
  await page.locator('.xterm').click()
  await page.keyboard.type('exit')
  await page.keyboard.press('Enter')
  await waitForOffer(page)
  t.equal(await focusOf(page), 'reconnect', 'the button has the keyboard')
  await page.keyboard.press('Tab')
  t.equal(await focusOf(page), 'screen-reader', 'then the screen reader box')
  await page.keyboard.press('Tab')
  t.equal(await focusOf(page), 'xterm-helper-textarea', 'then the terminal')
  await page.keyboard.press('Shift+Tab')
  t.equal(await focusOf(page), 'screen-reader', 'and out of it again')
  await page.keyboard.press('Shift+Tab')
  t.equal(await focusOf(page), 'reconnect', 'back to New shell')
  await page.keyboard.press('Enter')
  await waitForStatus(page, /^connected: shell [0-9]+$/)
  // With a shell running, Tab is the shell's again (completion).
  await page.keyboard.type('echo tab-$((2+2))')
  await page.keyboard.press('Tab')
  await page.keyboard.press('Enter')
  await waitForScreen(page, /tab-4/)
  t.equal(await focusOf(page), 'xterm-helper-textarea', 'the terminal kept the keyboard')
  await page.context().close()
})

t.test('with a shell running, Escape then Tab (or Shift+Tab) within half a second leaves the terminal for the header, and sends neither', async (t) => {
  const { page } = await shellPage(stack, 'edge_escape_tab')
  t.equal(await page.locator('.xterm-helper-textarea').getAttribute('aria-describedby'), 'keys output-hidden', 'the terminal\'s input is described by the hint, and says its output is not read out')
  t.equal(await page.locator('#keys').innerText(), 'Esc then Tab leaves the terminal')
  await page.locator('.xterm').click()
  // At bash's prompt: an Escape that reached readline would make the next key typed Alt+key.
  await page.keyboard.press('Escape')
  await page.keyboard.press('Tab')
  t.equal(await focusOf(page), 'screen-reader', 'Escape then Tab: the header\'s box has the keyboard')
  await page.keyboard.press('Tab')
  t.equal(await focusOf(page), 'xterm-helper-textarea', 'Tab from it: back in the terminal')
  await page.keyboard.type('echo back-$((3+4))')
  await page.keyboard.press('Enter')
  await waitForScreen(page, /back-7/)
  t.notMatch(await screen(page), /command not found/, 'the first key typed back was not read as Alt+key')
  // cat -vT shows what reaches the shell: ^[ for Escape, ^I for Tab.
  await page.keyboard.type('stty -echo; cat -vT')
  await page.keyboard.press('Enter')
  t.ok(await shellRuns(page, 'cat'), 'the shell runs cat')
  await page.keyboard.type('a')
  await page.keyboard.press('Escape')
  await page.keyboard.type('b')
  await page.keyboard.press('Tab')
  t.equal(await focusOf(page), 'xterm-helper-textarea', 'a key between Escape and Tab: the Tab is the shell\'s')
  await page.keyboard.press('Tab')
  t.equal(await focusOf(page), 'xterm-helper-textarea', 'and so is a Tab alone')
  await page.keyboard.press('Escape')
  await page.waitForTimeout(800)
  await page.keyboard.press('Tab')
  t.equal(await focusOf(page), 'xterm-helper-textarea', 'and a Tab more than half a second after an Escape')
  await page.keyboard.press('Escape')
  await page.keyboard.press('Shift+Tab')
  t.equal(await focusOf(page), 'screen-reader', 'Escape then Shift+Tab leaves too')
  await page.locator('.xterm').click()
  await page.keyboard.press('Enter')
  await waitForScreen(page, /\^\[b\^I\^I\^\[\^I/)
  t.match(await screen(page), /^a\^\[b\^I\^I\^\[\^I$/m, 'the shell got the Escapes and Tabs typed in it, and neither of the two gestures that left')
  await page.context().close()
})

/** WCAG's contrast ratio of two CSS rgb() colours. */
function contrast(a: string, b: string): number {
  const luminance = (color: string): number => {
    const [r, g, b] = color.match(/[0-9.]+/g)!.slice(0, 3).map((c) => {
      const s = Number(c) / 255
      return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4
    })
    return 0.2126 * r! + 0.7152 * g! + 0.0722 * b!
  }
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x)
  return (hi! + 0.05) / (lo! + 0.05)
}

t.test('the page\'s own messages in the terminal have a contrast of at least 4.5:1; an error after the exit is said in the status line', async (t) => {
  const { page } = await shellPage(stack, 'edge_contrast')
  await page.evaluate(() => ws!.send('this is not json'))
  await waitForScreen(page, /\[error: /)
  const colours = await page.evaluate(() => {
    const span = Array.from(document.querySelectorAll('.xterm-rows span')).find((s) => s.textContent?.includes('[error: '))
    return { fg: getComputedStyle(span).color, bg: getComputedStyle(document.querySelector('.xterm-viewport')).backgroundColor }
  })
  t.ok(contrast(colours.fg, colours.bg) >= 4.5, `the red error text (${colours.fg} on ${colours.bg}): ${contrast(colours.fg, colours.bg).toFixed(2)}:1`)
  await page.locator('.xterm').click()
  await page.keyboard.type('exit')
  await page.keyboard.press('Enter')
  await waitForOffer(page)
  t.equal(await status(page), 'shell exited with code 0')
  // Keys sent as the shell ended are answered with an error frame after its exit.
  await page.evaluate(() => ws!.send(JSON.stringify({ type: 'input', data: 'x' })))
  await waitForStatus(page, /not sent/)
  t.equal(await status(page), 'shell exited with code 0; keys typed after it were not sent')
  t.equal(await page.locator('#status').getAttribute('class'), 'error')
  t.equal(await focusOf(page), 'reconnect', 'the offered button keeps the keyboard')
  await page.context().close()
})

t.test('screen reader mode: the box turns on xterm\'s accessible output, and this browser remembers it', async (t) => {
  const { page } = await shellPage(stack, 'edge_reader')
  const accessible = (): Promise<string> => page.evaluate(() => document.querySelector('.xterm-accessibility-tree')?.textContent ?? '')
  t.equal(await page.evaluate(() => term.options.screenReaderMode), false, 'off at first')
  t.equal(await page.locator('.xterm-accessibility-tree').count(), 0, 'no accessible copy of the output')
  const described = (): Promise<string | null> => page.locator('.xterm-helper-textarea').getAttribute('aria-describedby')
  t.equal(await page.locator('#output-hidden').textContent(), 'Its output is read out only with the Screen reader box checked.')
  t.equal(await described(), 'keys output-hidden', 'the terminal\'s input says so')
  await page.locator('#screen-reader').check()
  t.equal(await page.evaluate(() => term.options.screenReaderMode), true, 'on')
  t.equal(await described(), 'keys', 'and no longer once the output is read out')
  t.equal(await focusOf(page), 'xterm-helper-textarea', 'the running shell has the keyboard back')
  await page.keyboard.type('echo read-$((6*7))')
  await page.keyboard.press('Enter')
  await waitForScreen(page, /read-42/)
  await until(async () => /read-42/.test(await accessible()), 15_000, 'the output in the accessibility tree')
  await page.reload()
  await waitForStatus(page, /^connected: shell [0-9]+$/)
  t.equal(await page.locator('#screen-reader').isChecked(), true, 'still on after a reload')
  t.equal(await page.evaluate(() => term.options.screenReaderMode), true)
  t.equal(await described(), 'keys')
  await page.locator('#screen-reader').uncheck()
  t.equal(await page.evaluate(() => term.options.screenReaderMode), false, 'and off again')
  t.equal(await described(), 'keys output-hidden')
  await page.context().close()
})

t.test('no longer admitted, reconnecting says why there is no ticket and offers Reload, which shows the 403 page', async (t) => {
  const { page } = await shellPage(stack, 'edge_revoked')
  await runUsersOk({ DATA_DIR: dataDir }, 'revoke', 'edge_revoked', 'developer')
  await page.evaluate(() => ws?.close())
  await waitForOffer(page)
  await page.locator('#reconnect').click()
  await waitForStatus(page, /no ticket/)
  t.match(await status(page), /^no ticket: \S/, 'the platform\'s error, not only its status')
  t.notMatch(await status(page), /HTTP 403/)
  t.equal(await page.locator('#reconnect').innerText(), 'Reload', 'the button offers to load the page again')
  const [res] = await Promise.all([page.waitForNavigation(), page.locator('#reconnect').click()])
  t.equal(res?.status(), 403, 'the 403 page')
  t.equal(await page.locator('#signout').count(), 1, 'with its sign-out button')
  await page.context().close()
})

t.test('a shell\'s exit code and signal are shown; New shell starts the next on the same connection, keys typed at once included', async (t) => {
  const { page, sockets } = await shellPage(stack, 'edge_exit')
  await page.locator('.xterm').click()
  await page.keyboard.type('exit 3')
  await page.keyboard.press('Enter')
  await waitForStatus(page, /shell exited/)
  t.equal(await status(page), 'shell exited with code 3')
  t.equal(await page.title(), 'shell exited with code 3 · Playfield developer terminal', 'and the tab')
  t.match(await screen(page), /\[shell exited with code 3\]/, 'and the terminal says it')
  t.equal(await page.locator('#reconnect').innerText(), 'New shell')
  // The window changes while no shell runs: no resize goes out for a shell that is not there.
  const cols = await page.evaluate(() => term.cols)
  await page.setViewportSize({ width: 800, height: 500 })
  await page.waitForFunction((c) => term.cols !== c, cols, { timeout: 15_000 })
  // Keys typed right after the button is pressed, before `created` can have come, are the new shell's.
  await page.evaluate(() => {
    document.getElementById('reconnect')!.click()
    term.input('echo new-$((7+7))\r', true)
  })
  await waitForScreen(page, /new-14/)
  await waitForStatus(page, /^connected: shell [0-9]+$/)
  t.match(await page.title(), /^connected: shell [0-9]+ · Playfield developer terminal$/, 'the tab follows')
  t.equal(await page.locator('#reconnect').isHidden(), true, 'the button is gone while the shell runs')
  await page.keyboard.type('kill -9 $$')
  await page.keyboard.press('Enter')
  await waitForStatus(page, /shell exited/)
  t.equal(await status(page), 'shell exited with signal 9')
  t.notMatch(await buffer(page), /\[error/, 'the bridge refused nothing')
  t.equal(sockets(), 1, 'one connection throughout')
  await page.context().close()
})

t.test('a shell that ends before its prompt: the exit stays on the status line', async (t) => {
  const own = await ownPair(t, stack, { SHELL: shellScript(t, 'exit 3\n') })
  const page = await signedIn(stack, 'edge_early_exit', true, own.at)
  await page.goto(`${own.at}/dev/terminal`)
  await waitForOffer(page)
  t.equal(await status(page), 'shell exited with code 3')
  // The keys typed before the shell went out (PROMPT_WAIT_MS, 2 s) after `created` for a shell
  // that printed nothing: that wait ends with the shell, and says nothing after it.
  await page.waitForTimeout(3000)
  t.equal(await status(page), 'shell exited with code 3', 'still, after the wait for a prompt would have ended')
  t.equal(await page.locator('#reconnect').innerText(), 'New shell')
  await page.context().close()
})

t.test('a paste of multi-byte text whose frame passes 1 MiB, in fewer characters than that, is not sent', async (t) => {
  const { page, sizes } = await shellPage(stack, 'edge_paste_utf8')
  // 400,000 euro signs: 400,000 UTF-16 units, 1.2 MB of UTF-8.
  await page.evaluate(() => term.paste('\u20ac'.repeat(400_000)))
  await waitForStatus(page, /paste not sent/)
  t.match(await status(page), /^connected: shell [0-9]+; paste not sent: 12000[0-9]{2} bytes as a frame; the terminal takes at most 1 MiB at once$/)
  t.ok(Math.max(0, ...sizes) < 1000, 'no frame of it went out')
  await page.locator('.xterm').click()
  await page.keyboard.type('echo still-$((8+1))')
  await page.keyboard.press('Enter')
  await waitForScreen(page, /still-9/)
  await page.context().close()
})

t.test('keys typed before the shell up to 65,536 units, exactly, all wait for it and run', async (t) => {
  const { page, release } = await heldTicketPage(stack, 'edge_early_full')
  // `: yyy…` and its Enter: 65,536 units in all (a paste's newline is sent as a carriage return).
  await page.evaluate((text) => term.paste(text), `: ${'y'.repeat(65_536 - 3)}\n`)
  release()
  await waitForStatus(page, /^connected: shell [0-9]+/)
  await page.keyboard.type('echo whole-$((3*3))')
  await page.keyboard.press('Enter')
  await waitForScreen(page, /whole-9/, 30_000)
  t.match(await status(page), /^connected: shell [0-9]+$/, 'nothing was dropped')
  t.notMatch(await buffer(page), /not sent/)
  await page.context().close()
})

t.test('output past the bridge\'s 1 MiB ack window reaches the screen: the page acknowledges what it renders', async (t) => {
  const page = await signedIn(stack, 'edge_flood', true)
  const counts = countAcks(page)
  await page.goto(`${origin}/dev/terminal`)
  await waitForStatus(page, /^connected: shell [0-9]+$/)
  await page.locator('.xterm').click()
  await page.keyboard.type("head -c 2500000 /dev/zero | tr '\\0' x; echo; echo flood-$((2+3))")
  await page.keyboard.press('Enter')
  await waitForScreen(page, /flood-5/, 60_000)
  t.ok(counts.output > 2_500_000, `all of it came (${counts.output} characters)`)
  // The acks for what is on screen follow its rendering.
  await until(() => counts.acked === counts.output, 15_000, `acks for all output (${counts.acked} of ${counts.output})`)
  t.equal(counts.acked, counts.output, 'every output character acknowledged, none twice')
  await page.context().close()
})

t.test('the page acknowledges output once xterm has written it, not when it arrives', async (t) => {
  const page = await signedIn(stack, 'edge_ack_written', true)
  const counts = countAcks(page)
  await page.goto(`${origin}/dev/terminal`)
  await waitForStatus(page, /^connected: shell [0-9]+$/)
  // The shell's greeting and prompt all acknowledged, and nothing more coming: they can come in
  // pieces (once the first frame, 8 characters, was acked before the rest arrived, and the rest's
  // ack was then counted as if the hold below had not held it).
  let seen = -1
  await until(async () => {
    const settled = counts.acked === counts.output && counts.output === seen
    seen = counts.output
    await sleep(500)
    return settled
  }, 15_000, 'the prompt acknowledged')
  // xterm's write callbacks are held from here: the text is written to the screen, and the page is
  // told so only when the test lets the callbacks run.
  await page.evaluate(() => {
    const held: Array<() => void> = []
    const write = term.write.bind(term)
    term.write = (data, done) => write(data, done && (() => held.push(done)))
    Object.assign(globalThis, { heldWrites: held, unhold: () => (term.write = write) })
  })
  const before = { ...counts }
  await page.locator('.xterm').click()
  await page.keyboard.type('echo held-$((3+4))')
  await page.keyboard.press('Enter')
  await waitForScreen(page, /held-7/)
  await sleep(500)
  t.ok(counts.output > before.output, 'the echo and its output came')
  t.equal(counts.acked, before.acked, 'nothing acknowledged while xterm has not reported it written')
  const held = await page.evaluate(() => (globalThis as unknown as { heldWrites: unknown[] }).heldWrites.length)
  t.ok(held > 0, `xterm wrote ${held} frames whose callbacks wait`)
  await page.evaluate(() => {
    const { heldWrites, unhold } = globalThis as unknown as { heldWrites: Array<() => void>; unhold: () => void }
    unhold()
    for (const done of heldWrites.splice(0)) done()
  })
  await until(() => counts.acked === counts.output, 15_000, `acks once written (${counts.acked} of ${counts.output})`)
  t.equal(counts.acked, counts.output, 'then every character is acknowledged, once')
  await page.context().close()
})

t.test('a paste whose frame is one byte over 1 MiB is not sent', async (t) => {
  const { page, sizes } = await shellPage(stack, 'edge_paste_edge')
  // `{"type":"input","data":"…"}` is 26 bytes around the text: 1,048,577 in all. (As typed input:
  // a paste adds the bracketed-paste marks readline asked for, 22 bytes more as JSON.)
  await page.evaluate((n) => term.input('y'.repeat(n), true), 1024 * 1024 + 1 - 26)
  await waitForStatus(page, /not sent|too large/)
  t.match(await status(page), /^connected: shell [0-9]+; paste not sent: 1048577 bytes as a frame; the terminal takes at most 1 MiB at once$/)
  t.ok(Math.max(0, ...sizes) < 1000, 'no frame of it went out')
  await page.context().close()
})

t.test('a paste whose frame is exactly 1 MiB is sent, and the shell reads all of it', async (t) => {
  const { page, sizes } = await shellPage(stack, 'edge_paste_exact')
  // A reader of exactly the paste's bytes, without echo or a line limit: the megabyte costs no screen.
  await page.evaluate(() => term.input("stty -echo -icanon; head -c 1048550 >/dev/null; echo READ'-'ALL\r", true))
  await waitForScreen(page, /READ'-'ALL/)
  await page.evaluate((n) => term.input('y'.repeat(n), true), 1024 * 1024 - 26)
  await waitForScreen(page, /READ-ALL/, 30_000)
  t.ok(sizes.includes(1024 * 1024), 'one frame of 1,048,576 bytes went out')
  t.notMatch(await status(page), /not sent/)
  await page.context().close()
})

t.test('greeted by a profile, then a second before the prompt', async (t) => {
  const own = await ownPair(t, stack, { SHELL: shellScript(t, 'echo welcome-aboard\nsleep 1\nexec /bin/bash "$@"\n') })

  t.test('a long line of multi-byte text (under 4,095 characters, over 4,095 bytes) typed early waits for the prompt and runs whole', async (t) => {
    const { page, release } = await heldTicketPage(stack, 'edge_long_utf8', own.at)
    // 2,537 characters, 5,037 bytes: line mode would keep 4,095 bytes of it.
    await page.evaluate((line) => term.paste(line), `echo HEAD-${'\u00e9'.repeat(2500)}-END | wc -c; echo TAIL-RAN`)
    await page.keyboard.press('Enter')
    release()
    await waitForScreen(page, /TAIL-RAN\s*\S*\$/)
    t.match(await screen(page), /\b5010\s+TAIL-RAN/, 'all 5,010 bytes of the echo, then the command after it')
    await page.context().close()
  })

  t.test('keys typed while the shell starts wait with those typed before it, and run after them', async (t) => {
    const { page, release } = await heldTicketPage(stack, 'edge_starting_keys', own.at)
    await page.evaluate((line) => term.paste(line), `echo HEAD-${'x'.repeat(5000)}-END | wc -c; echo TAIL-RAN`)
    await page.keyboard.press('Enter')
    release()
    await waitForStatus(page, /^connected: starting shell [0-9]+/)
    await page.keyboard.type('echo second-$((4+4))')
    await page.keyboard.press('Enter')
    await until(async () => (await buffer(page)).split('\n').includes('second-8'), 15_000, 'the line second-8')
    const lines = (await buffer(page)).split('\n')
    const tail = lines.indexOf('TAIL-RAN')
    const second = lines.indexOf('second-8')
    t.ok(tail >= 0 && tail < second, `the line typed first ran first (TAIL-RAN at ${tail}, second-8 at ${second})`)
    t.ok(lines.includes('5010'), 'and whole')
    await page.context().close()
  })
})

t.test('the window changing while the shell starts: the shell gets the size the screen has once it is there', async (t) => {
  const page = await signedIn(stack, 'edge_resize_starting', true)
  // The bridge's frames pass through unchanged and in order; from `created` on they wait until the
  // window has changed (the bridge answers a create at once: no other way to change it in between).
  let held: (string | Buffer)[] | null = null
  let release = (): void => undefined
  await page.routeWebSocket(/\/terminal-ws\/ws/, (route) => {
    const server = route.connectToServer()
    route.onMessage((message) => server.send(message))
    server.onMessage((message) => {
      if (held === null && /"type":"created"/.test(String(message))) held = []
      if (held) held.push(message)
      else route.send(message)
    })
    release = () => {
      for (const message of held ?? []) route.send(message)
      held = null
    }
  })
  await page.goto(`${origin}/dev/terminal`)
  await until(() => held !== null, 15_000, 'the shell\'s `created`')
  t.equal(await status(page), 'connected', 'the page has sent its create, and has no shell yet')
  const cols = await page.evaluate(() => term.cols)
  await page.setViewportSize({ width: 700, height: 400 })
  await page.waitForFunction((c) => term.cols !== c, cols, { timeout: 15_000 })
  release()
  await waitForStatus(page, /^connected: shell [0-9]+$/)
  await page.locator('.xterm').click()
  await page.keyboard.type('echo size=$(stty size | tr " " x)')
  await page.keyboard.press('Enter')
  await waitForScreen(page, /size=[0-9]+x[0-9]+/)
  const shell = /size=([0-9]+x[0-9]+)/.exec(await screen(page))![1]!
  t.equal(shell, await page.evaluate(() => `${term.rows}x${term.cols}`), 'the shell has the screen\'s size')
  await page.context().close()
})

t.test('a shell the bridge cannot start: its error is shown, and New shell tries again on the same connection', { skip: process.getuid?.() !== 0 && 'needs root' }, async (t) => {
  const own = await ownPair(t, stack, {}, NO_FORKS)
  const page = await signedIn(stack, 'edge_no_shell', true, own.at)
  let sockets = 0
  page.on('websocket', () => sockets++)
  await page.goto(`${own.at}/dev/terminal`)
  await waitForOffer(page)
  t.equal(await status(page), 'no shell: the shell could not be started')
  t.equal(await page.locator('#status').getAttribute('class'), 'error')
  t.match(await screen(page), /\[error: the shell could not be started\]/, 'and the terminal says it')
  t.equal(await page.locator('#reconnect').innerText(), 'New shell')
  await page.locator('#reconnect').click()
  const refusals = async (): Promise<number> => (await buffer(page)).split('[error: the shell could not be started]').length - 1
  await until(async () => (await refusals()) === 2, 15_000, 'the second refusal')
  await waitForOffer(page)
  t.equal(await status(page), 'no shell: the shell could not be started', 'refused again, said the same way')
  t.equal(await page.locator('#reconnect').innerText(), 'New shell')
  t.equal(sockets, 1, 'one connection throughout')
  await page.context().close()
})
