// The developer terminal page: a ticket from the platform, a WebSocket to the bridge through
// /terminal-ws/, xterm.js for the screen (its character widths from width-provider.js; keys typed
// before the shell is ready held by early-input.js). Frames: CONTRACT §6 and spec terminal-bridge §2.
'use strict'

/**
 * The bridge closes the connection on a frame over 1 MiB (1009, CONTRACT §6). Each keystroke or
 * paste goes out as one frame: the bridge takes it whole or, when the shell has not read what came
 * before, refuses it whole. Sent in pieces, a paste into a program still reading the ones before
 * lost its tail, and a pasted command could run without its end.
 */
const MAX_FRAME_BYTES = 1024 * 1024
const utf8 = new TextEncoder()
/** The bridge takes sizes from 1 to 1000 (CONTRACT §6); a wider window gets 1000 columns. */
const MAX_SIZE = 1000
/** Why a connection ended, by WebSocket close code. */
const CLOSE_REASONS = {
  1000: 'connection closed',
  1005: 'connection closed',
  1001: 'the terminal bridge is shutting down',
  1006: 'connection lost (the terminal bridge or the platform stopped, or the network failed)',
  1008: 'access ended',
  1009: 'a message was too large for the bridge',
  1011: 'the terminal bridge failed',
  1013: 'connection limit reached: too many terminals are open; close one, then reconnect',
}

/** Why a connection that never opened failed: the page cannot tell which; the bridge's log says. */
const NOT_OPENED = 'the terminal bridge refused the connection or cannot be reached (its log says which)'

const statusLine = document.getElementById('status')
const PAGE_TITLE = document.title
const button = document.getElementById('reconnect')
// allowProposedApi: `term.unicode` is proposed API in xterm.js 6.
// minimumContrastRatio: every colour drawn, the page's red messages and a shell's blue included,
// at least WCAG AA's 4.5:1 against its background (xterm's red on black is 3.6:1).
const term = new Terminal({
  cursorBlink: !matchMedia('(prefers-reduced-motion: reduce)').matches,
  minimumContrastRatio: 4.5,
  scrollback: 10000,
  fontFamily: 'ui-monospace, Menlo, Consolas, monospace',
  fontSize: 14,
  allowProposedApi: true,
})
const fit = new FitAddon.FitAddon()
term.loadAddon(fit)
term.unicode.register(createWidthProvider())
term.unicode.activeVersion = 'shell'
term.open(document.getElementById('terminal'))
// Screen reader mode (xterm's live region of the output; off by default, as it costs every write
// some work): a box in the header, remembered by this browser.
const readerMode = document.getElementById('screen-reader')
readerMode.checked = stored('screenReader') === 'on'
/** Screen reader mode as the box says; the terminal's input tells a screen reader when the output is not read out. */
function applyReaderMode() {
  term.options.screenReaderMode = readerMode.checked
  term.textarea.setAttribute('aria-describedby', readerMode.checked ? 'keys' : 'keys output-hidden')
}
applyReaderMode()
readerMode.addEventListener('change', () => {
  applyReaderMode()
  store('screenReader', readerMode.checked ? 'on' : 'off')
  // Clicked while a shell runs: the keys typed next are the shell's, not the box's.
  if (shellRunning) term.focus()
})
// While no shell runs, Tab leaves the terminal (which has no use for keys then) for the page's
// button and box: the keyboard is never held in a terminal that takes nothing. While one runs,
// Tab is the shell's (completion), and Escape then Tab (or Shift+Tab) within half a second leaves
// for the header's box. Said by the header's hint, which describes the terminal's input to a
// screen reader too (applyReaderMode). At the shell's prompt (the normal screen) an Escape alone
// does nothing until the next key, which readline then reads as Alt+key: it is held until that
// key (at most the half second) and dropped when the key is the Tab that leaves, so the first key
// typed on coming back is not taken for Alt+key. A full-screen program (vi, less: the alternate
// screen) gets its Escape at once.
const ESCAPE_WINDOW_MS = 500
const MODIFIERS = new Set(['Shift', 'Control', 'Alt', 'Meta'])
/** When the last key pressed in the terminal was a bare Escape (performance.now()). */
let escapedAt = -Infinity
/** The timer of an Escape held back at the prompt, or null. */
let heldEscape = null
function sendHeldEscape() {
  if (heldEscape === null) return
  clearTimeout(heldEscape)
  heldEscape = null
  term.input('\x1b', true)
}
function dropHeldEscape() {
  clearTimeout(heldEscape)
  heldEscape = null
}
term.attachCustomKeyEventHandler((event) => {
  if (MODIFIERS.has(event.key)) return true
  if (event.key === 'Tab') {
    if (!button.hidden) return false
    if (performance.now() - escapedAt > ESCAPE_WINDOW_MS) {
      if (event.type === 'keydown') sendHeldEscape()
      return true
    }
    if (event.type === 'keydown') {
      escapedAt = -Infinity
      dropHeldEscape()
      event.preventDefault()
      readerMode.focus()
    }
    return false
  }
  if (event.type !== 'keydown') return true
  sendHeldEscape()
  const bareEscape = event.key === 'Escape' && !event.ctrlKey && !event.altKey && !event.metaKey && !event.shiftKey
  escapedAt = bareEscape ? performance.now() : -Infinity
  if (!bareEscape || term.buffer.active.type !== 'normal') return true
  heldEscape = setTimeout(sendHeldEscape, ESCAPE_WINDOW_MS)
  return false
})
// Clicked away meanwhile: the Escape goes now.
term.textarea.addEventListener('blur', sendHeldEscape)
// Keys typed from the start wait for the shell (early): the terminal has them from the start.
term.focus()
fitTerminal()

/** This browser's setting `key`, or null (storage may be refused: a private window, a policy). */
function stored(key) {
  try {
    return localStorage.getItem(`playfield.terminal.${key}`)
  } catch {
    return null
  }
}

function store(key, value) {
  try {
    localStorage.setItem(`playfield.terminal.${key}`, value)
  } catch {
    // Not remembered: the box still works for this page.
  }
}

/** Fit the terminal to the window, within the sizes the bridge takes: the screen never shows cells the shell does not have. */
function fitTerminal() {
  fit.fit()
  if (term.cols > MAX_SIZE || term.rows > MAX_SIZE) term.resize(Math.min(MAX_SIZE, term.cols), Math.min(MAX_SIZE, term.rows))
}

let ws = null
let shellRunning = false
/** The running shell's pid, for the status line. */
let shellPid = null
/** How the last shell ended ("shell exited with code 0"), for the status line. */
let exited = ''

/** Keys typed before the shell is ready (a ticket, the connection, a create out, its prompt): sent once it is. */
const early = holdEarlyKeys((keys, dropped) => {
  setStatus(`connected: shell ${shellPid}`)
  sendInput(keys)
  if (dropped) refused(dropped)
})
/** What the button does now: a new shell or connection, or a reload for the page's sign-in. */
let buttonAction = null
/** The size the shell has, as last sent. */
let sent = { cols: 0, rows: 0 }

/** Set the status line: an error, or `busy` (a step on the way to a shell). */
function setStatus(text, isError, busy = false) {
  statusLine.textContent = text
  statusLine.className = isError ? 'error' : ''
  // The steps of a connection come within a fraction of a second: a screen reader is told the
  // outcome ("connected: shell N", or what went wrong), not each step (aria-busy holds them back).
  statusLine.setAttribute('aria-busy', String(busy))
  // The tab says it too: a shell that ended in a tab out of view shows in the tab strip.
  document.title = `${text} · ${PAGE_TITLE}`
}

function send(frame) {
  if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(frame))
}

/**
 * Input the shell will not get (a refused paste, the bridge's `error` frame): said in the terminal
 * and kept in the status line, where the echo of earlier input cannot scroll it away.
 */
function refused(message) {
  term.write(`\r\n\x1b[31m[${message}]\x1b[0m\r\n`)
  setStatus(`connected: shell ${shellPid}; ${message}`, true)
}

/** Offer the button; it takes the keyboard, which the terminal has no use for now. */
function offer(label, action = reconnect) {
  button.textContent = label
  buttonAction = action
  button.hidden = false
  button.focus()
}

/**
 * The terminal's size as the bridge takes it. fitTerminal keeps the screen within 1000, but its
 * fit goes past that for a moment first (a resize event included), which must not reach the bridge.
 */
function size() {
  const clamp = (n) => Math.min(MAX_SIZE, Math.max(1, n))
  return { cols: clamp(term.cols), rows: clamp(term.rows) }
}

function create() {
  fitTerminal()
  sent = size()
  early.expect()
  send({ type: 'create', ...sent })
  term.focus()
}

function sendInput(data) {
  if (data === '' || !ws || ws.readyState !== WebSocket.OPEN) return
  const frame = JSON.stringify({ type: 'input', data })
  // A UTF-16 unit is at most 3 bytes of UTF-8: only a long frame needs counting. JSON writes a
  // control character as 6 bytes (\u0001), so the count is of the frame, not of the text.
  const bytes = frame.length * 3 <= MAX_FRAME_BYTES ? frame.length : utf8.encode(frame).length
  if (bytes > MAX_FRAME_BYTES) return refused(`paste not sent: ${bytes} bytes as a frame; the terminal takes at most 1 MiB at once`)
  ws.send(frame)
}

/** Tell the shell the terminal's size when it differs from what it has. */
function sendSize() {
  const now = size()
  if (now.cols === sent.cols && now.rows === sent.rows) return
  sent = now
  send({ type: 'resize', ...now })
}

async function connect() {
  button.hidden = true
  // The button had the focus: the keys typed next are for the shell.
  term.focus()
  // Keys typed from now on wait for the shell, also while the ticket and the connection are on their way.
  early.expect()
  setStatus('getting a ticket…', false, true)
  let answer
  try {
    const res = await fetch('/dev/terminal/ticket', { method: 'POST', credentials: 'same-origin' })
    answer = { ok: res.ok, status: res.status, body: await res.json().catch(() => ({})) }
  } catch {
    early.cancel()
    setStatus('the platform cannot be reached', true)
    return offer('Reconnect')
  }
  if (!answer.ok) {
    early.cancel()
    setStatus(answer.body.error ? `no ticket: ${answer.body.error}` : `no ticket (HTTP ${answer.status})`, true)
    // Signed out (or no longer admitted) since the page loaded: the page, loaded again, signs in.
    if (answer.status === 401) return offer('Sign in', () => location.reload())
    if (answer.status === 403) return offer('Reload', () => location.reload())
    return offer('Reconnect')
  }
  setStatus('connecting…', false, true)
  const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:'
  const socket = new WebSocket(`${scheme}//${location.host}/terminal-ws/ws?ticket=${encodeURIComponent(answer.body.ticket)}`)
  ws = socket
  let opened = false
  socket.onopen = () => {
    opened = true
    setStatus('connected', false, true)
    create()
  }
  socket.onmessage = (event) => {
    const frame = JSON.parse(event.data)
    if (frame.type === 'output') {
      // The ack tells the bridge what is on screen, so a flood never runs far ahead of the page.
      const size = frame.data.length
      term.write(frame.data, () => send({ type: 'ack', bytes: size }))
      early.output(frame.data)
    } else if (frame.type === 'created') {
      shellRunning = true
      shellPid = frame.pid
      // "connected: shell N" once it is at its prompt (early's ready): keys typed until then wait.
      setStatus(`connected: starting shell ${frame.pid}…`, false, true)
      // The window may have changed while the shell started; keys typed wait for its prompt.
      sendSize()
      early.started()
    } else if (frame.type === 'exit') {
      shellRunning = false
      early.cancel()
      const how = frame.signal !== null ? `signal ${frame.signal}` : `code ${frame.code}`
      exited = `shell exited with ${how}`
      term.write(`\r\n\x1b[2m[${exited}]\x1b[0m\r\n`)
      setStatus(exited)
      offer('New shell')
    } else if (frame.type === 'error') {
      if (shellRunning) return refused(`error: ${frame.message}`)
      term.write(`\r\n\x1b[31m[error: ${frame.message}]\x1b[0m\r\n`)
      // Refused before any shell ran (the create itself): offer another try.
      if (early.creating) {
        early.cancel()
        setStatus(`no shell: ${frame.message}`, true)
        offer('New shell')
      } else {
        // Keys typed as the shell ended, answered after its exit: said where a screen reader hears it.
        setStatus(`${exited}; keys typed after it were not sent`, true)
      }
    }
  }
  socket.onclose = (event) => {
    if (ws !== socket) return
    ws = null
    const hadShell = shellRunning
    shellRunning = false
    early.cancel()
    // A refused upgrade (the bridge's 401, 403 or 404, or the platform's 502 when the bridge is
    // down) reaches the page only as a close without a handshake; the browser hides the status.
    const reason = opened ? CLOSE_REASONS[event.code] || `connection closed (${event.code})` : NOT_OPENED
    // The bridge ends a session whose connection closed (CONTRACT §6): said, or Reconnect reads as a way back to it.
    const ended = hadShell ? '; the shell and its jobs were ended, and Reconnect starts a new one' : ''
    // The bridge's own reasons for 1013 and 1001 say again what the page says; that of 1008
    // ("access ended: signed out") begins with it.
    const detail = event.reason && event.code !== 1013 && event.code !== 1001 ? event.reason : ''
    const said = detail.startsWith(reason) ? detail : detail ? `${reason}: ${detail}` : reason
    setStatus(`${said}${ended}`, event.code !== 1000)
    term.write(`\r\n\x1b[33m[${reason}${ended}]\x1b[0m\r\n`)
    offer('Reconnect')
  }
}

term.onData((data) => {
  // A paste (no key) after an Escape held back: the Escape first.
  sendHeldEscape()
  if (shellRunning && !early.starting) sendInput(data)
  else if (early.creating || early.starting) early.keep(data)
})
term.onResize(() => {
  if (shellRunning) sendSize()
})
// The terminal's box, not the window: a status line that wraps takes rows from it too.
new ResizeObserver(fitTerminal).observe(document.getElementById('terminal'))
button.addEventListener('click', () => buttonAction())

/** A new shell on the open connection, else a new connection. */
function reconnect() {
  if (ws && ws.readyState === WebSocket.OPEN && !shellRunning) {
    button.hidden = true
    create()
  } else {
    connect()
  }
}

connect()
