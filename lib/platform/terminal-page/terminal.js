// The developer terminal page: a ticket from the platform, a WebSocket to the bridge through
// /terminal-ws/, xterm.js for the screen. Frames: CONTRACT §6 and spec terminal-bridge §2.
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
/** Keystrokes typed while the shell is on its way (ticket, connection, create) wait for it, up to this much. */
const MAX_EARLY_INPUT = 64 * 1024
/** Why a connection ended, by WebSocket close code. */
const CLOSE_REASONS = {
  1000: 'connection closed',
  1001: 'the terminal bridge is shutting down',
  1006: 'connection lost (is the terminal bridge running?)',
  1008: 'connection refused',
  1009: 'a message was too large for the bridge',
  1011: 'the terminal bridge failed',
  1013: 'connection limit reached: too many terminals are open; close one, then reconnect',
}

/** Why a connection that never opened failed: the page cannot tell which; the bridge's log says. */
const NOT_OPENED = 'the terminal bridge refused the connection or cannot be reached (its log says which)'

const statusLine = document.getElementById('status')
const button = document.getElementById('reconnect')
// allowProposedApi: `term.unicode` is proposed API in xterm.js 6.
const term = new Terminal({ cursorBlink: true, scrollback: 10000, fontFamily: 'ui-monospace, Menlo, Consolas, monospace', fontSize: 14, allowProposedApi: true })
const fit = new FitAddon.FitAddon()
term.loadAddon(fit)
term.unicode.register(shellWidths())
term.unicode.activeVersion = 'shell'
term.open(document.getElementById('terminal'))
// Keys typed from the start wait for the shell (earlyInput): the terminal has them from the start.
term.focus()
fitTerminal()

/**
 * Character widths as the shell's C library counts them: what the screen shows of a line being
 * edited is what the shell has only when both count the same columns. xterm.js's default Unicode 6
 * tables give an emoji one column where glibc gives two; its Unicode 11 add-on still gives one to
 * the emoji of Unicode 12 and later (🥲 🫠), which glibc 2.36 (Unicode 14) makes two, and counts
 * their newer combining marks as a column. This takes Unicode 11's widths and counts those two
 * kinds by the browser's own Unicode data, so a width differs from glibc's only for a few rare CJK
 * symbols. Regional indicators (flag halves) stay one column, as in glibc.
 */
function shellWidths() {
  let v11
  // The add-on gives its provider only to a terminal it is loaded into: a stand-in takes it.
  new Unicode11Addon.Unicode11Addon().activate({ unicode: { register: (provider) => { v11 = provider } } })
  const EMOJI = /\p{Emoji_Presentation}/u
  const MARK = /[\p{Mn}\p{Me}]/u
  const isRegionalIndicator = (cp) => cp >= 0x1f1e6 && cp <= 0x1f1ff
  const width = (cp) => {
    const w = v11.wcwidth(cp)
    // No emoji or mark below U+0300; most text never reaches the regular expressions.
    if (w !== 1 || cp < 0x300) return w
    const char = String.fromCodePoint(cp)
    if (EMOJI.test(char) && !isRegionalIndicator(cp)) return 2
    return MARK.test(char) ? 0 : 1
  }
  // A character whose width changed is given the properties Unicode 11 gives one with that width
  // (how it joins the preceding one included): 😀 for two columns, U+0300 for a combining mark.
  const STAND_IN = { 0: 0x0300, 2: 0x1f600 }
  return {
    version: 'shell',
    wcwidth: width,
    charProperties(cp, preceding) {
      if (cp < 0x300) return v11.charProperties(cp, preceding)
      const w = width(cp)
      return v11.charProperties(w === v11.wcwidth(cp) ? cp : STAND_IN[w], preceding)
    },
  }
}

/** Fit the terminal to the window, within the sizes the bridge takes: the screen never shows cells the shell does not have. */
function fitTerminal() {
  fit.fit()
  if (term.cols > MAX_SIZE || term.rows > MAX_SIZE) term.resize(Math.min(MAX_SIZE, term.cols), Math.min(MAX_SIZE, term.rows))
}

let ws = null
let shellRunning = false
/** A shell is on its way (a ticket, the connection, a create out): keystrokes wait in earlyInput. */
let creating = false
let earlyInput = ''
/** The size the shell has, as last sent. */
let sent = { cols: 0, rows: 0 }

function setStatus(text, isError) {
  statusLine.textContent = text
  statusLine.className = isError ? 'error' : ''
}

function send(frame) {
  if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(frame))
}

function offer(label) {
  button.textContent = label
  button.hidden = false
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
  creating = true
  send({ type: 'create', ...sent })
  term.focus()
}

function sendInput(data) {
  if (data === '' || !ws || ws.readyState !== WebSocket.OPEN) return
  const frame = JSON.stringify({ type: 'input', data })
  // A UTF-16 unit is at most 3 bytes of UTF-8: only a long frame needs counting. JSON writes a
  // control character as 6 bytes (\u0001), so the count is of the frame, not of the text.
  const bytes = frame.length * 3 <= MAX_FRAME_BYTES ? frame.length : utf8.encode(frame).length
  if (bytes > MAX_FRAME_BYTES) {
    term.write(`\r\n\x1b[31m[paste not sent: ${bytes} bytes as a frame; the terminal takes at most 1 MiB at once]\x1b[0m\r\n`)
    return
  }
  ws.send(frame)
}

/** No shell is coming (no ticket, the connection closed): what was typed for it is dropped. */
function noShell() {
  creating = false
  earlyInput = ''
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
  creating = true
  earlyInput = ''
  setStatus('getting a ticket…')
  let answer
  try {
    const res = await fetch('/dev/terminal/ticket', { method: 'POST', credentials: 'same-origin' })
    answer = { ok: res.ok, status: res.status, body: await res.json().catch(() => ({})) }
  } catch {
    noShell()
    setStatus('the platform cannot be reached', true)
    return offer('Reconnect')
  }
  if (!answer.ok) {
    noShell()
    setStatus(answer.body.error ? `no ticket: ${answer.body.error}` : `no ticket (HTTP ${answer.status})`, true)
    return offer('Reconnect')
  }
  setStatus('connecting…')
  const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:'
  const socket = new WebSocket(`${scheme}//${location.host}/terminal-ws/ws?ticket=${encodeURIComponent(answer.body.ticket)}`)
  ws = socket
  let opened = false
  socket.onopen = () => {
    opened = true
    setStatus('connected')
    create()
  }
  socket.onmessage = (event) => {
    const frame = JSON.parse(event.data)
    if (frame.type === 'output') {
      // The ack tells the bridge what is on screen, so a flood never runs far ahead of the page.
      const size = frame.data.length
      term.write(frame.data, () => send({ type: 'ack', bytes: size }))
    } else if (frame.type === 'created') {
      shellRunning = true
      creating = false
      setStatus(`connected: shell ${frame.pid}`)
      // The window may have changed while the shell started, and keys may have been typed.
      sendSize()
      sendInput(earlyInput)
      earlyInput = ''
    } else if (frame.type === 'exit') {
      shellRunning = false
      const how = frame.signal !== null ? `signal ${frame.signal}` : `code ${frame.code}`
      term.write(`\r\n\x1b[2m[shell exited with ${how}]\x1b[0m\r\n`)
      setStatus(`shell exited with ${how}`)
      offer('New shell')
    } else if (frame.type === 'error') {
      term.write(`\r\n\x1b[31m[error: ${frame.message}]\x1b[0m\r\n`)
      // Refused before any shell ran (the create itself): offer another try.
      if (creating) {
        noShell()
        setStatus(`no shell: ${frame.message}`, true)
        offer('New shell')
      }
    }
  }
  socket.onclose = (event) => {
    if (ws !== socket) return
    ws = null
    shellRunning = false
    noShell()
    // A refused upgrade (the bridge's 401, 403 or 404, or the platform's 502 when the bridge is
    // down) reaches the page only as a close without a handshake; the browser hides the status.
    const reason = opened ? CLOSE_REASONS[event.code] || `connection closed (${event.code})` : NOT_OPENED
    setStatus(event.reason && event.code !== 1013 ? `${reason}: ${event.reason}` : reason, event.code !== 1000)
    term.write(`\r\n\x1b[33m[${reason}]\x1b[0m\r\n`)
    offer('Reconnect')
  }
}

term.onData((data) => {
  if (shellRunning) sendInput(data)
  else if (creating && earlyInput.length + data.length <= MAX_EARLY_INPUT) earlyInput += data
})
term.onResize(() => {
  if (shellRunning) sendSize()
})
window.addEventListener('resize', fitTerminal)
button.addEventListener('click', () => {
  if (ws && ws.readyState === WebSocket.OPEN && !shellRunning) {
    button.hidden = true
    create()
  } else {
    connect()
  }
})

connect()
