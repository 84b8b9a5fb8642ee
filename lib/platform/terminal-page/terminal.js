// The developer terminal page: a ticket from the platform, a WebSocket to the bridge through
// /terminal-ws/, xterm.js for the screen. Frames: CONTRACT §6 and spec terminal-bridge §2.
'use strict'

/**
 * Keystrokes and pastes go out in pieces well under the bridge's 1 MiB frame limit, counted in
 * UTF-16 units: JSON writes a control character as 6 bytes (`\u0001`), so 256 K of them made a
 * 1.5 MiB frame, which the bridge closes with 1009. 128 K units are at most 768 KiB.
 */
const INPUT_CHUNK = 128 * 1024
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

const statusLine = document.getElementById('status')
const button = document.getElementById('reconnect')
// allowProposedApi: `term.unicode` is proposed API in xterm.js 6.
const term = new Terminal({ cursorBlink: true, scrollback: 10000, fontFamily: 'ui-monospace, Menlo, Consolas, monospace', fontSize: 14, allowProposedApi: true })
const fit = new FitAddon.FitAddon()
term.loadAddon(fit)
// Character widths of Unicode 11, as the shell's C library counts them: with xterm's default
// Unicode 6 tables an emoji took one column on screen and two in the shell, and line editing
// showed other text than the line the shell had.
term.loadAddon(new Unicode11Addon.Unicode11Addon())
term.unicode.activeVersion = '11'
term.open(document.getElementById('terminal'))
fit.fit()

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

/** The terminal's size as the bridge takes it. */
function size() {
  const clamp = (n) => Math.min(MAX_SIZE, Math.max(1, n))
  return { cols: clamp(term.cols), rows: clamp(term.rows) }
}

function create() {
  fit.fit()
  sent = size()
  creating = true
  send({ type: 'create', ...sent })
  term.focus()
}

function sendInput(data) {
  for (let at = 0; at < data.length;) {
    let end = Math.min(data.length, at + INPUT_CHUNK)
    // Never between the two halves of a surrogate pair (an emoji): each half alone is no character.
    const last = data.charCodeAt(end - 1)
    if (end < data.length && last >= 0xd800 && last <= 0xdbff) end--
    send({ type: 'input', data: data.slice(at, end) })
    at = end
  }
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
  socket.onopen = () => {
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
    const reason = CLOSE_REASONS[event.code] || `connection closed (${event.code})`
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
window.addEventListener('resize', () => fit.fit())
button.addEventListener('click', () => {
  if (ws && ws.readyState === WebSocket.OPEN && !shellRunning) {
    button.hidden = true
    create()
  } else {
    connect()
  }
})

connect()
