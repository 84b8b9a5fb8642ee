// Keys typed before the shell is ready: kept, and sent once it is at its prompt, as typing ahead
// in any terminal. Loaded before terminal.js, which holds the page's keys with holdEarlyKeys.
'use strict'

/** Keystrokes typed while the shell is on its way (ticket, connection, create) wait for it, up to this many UTF-16 units. */
const MAX_EARLY_INPUT = 64 * 1024
/**
 * They go to the shell with its first output (its prompt), as typing ahead in any terminal: the
 * shell may still be in the terminal's line mode, which takes lines up to LINE_MODE_MAX bytes and
 * cuts a longer one, which would then run without its end. Keys holding a longer line wait for
 * the prompt itself (a login shell's profile may print before it): the line editor turning on
 * bracketed paste (LINE_EDITOR_ON), which readline (bash 5.1 and later by default) writes once it
 * has left line mode, just before the prompt; for a shell that does not write it, the shell's
 * output quiet for PROMPT_WAIT_MS. A shell that prints nothing gets them PROMPT_WAIT_MS after it
 * started.
 */
const LINE_MODE_MAX = 4095
const LINE_EDITOR_ON = '\x1b[?2004h'
const PROMPT_WAIT_MS = 2000

/**
 * The page's early keys. `ready(keys, dropped)` is called once the shell is ready for them, with
 * the keys to send and why some were not kept ('' when all were).
 */
function holdEarlyKeys(ready) {
  const utf8 = new TextEncoder()
  /** A shell is on its way (a ticket, the connection, a create out): keystrokes wait. */
  let creating = false
  /**
   * The shell has started but is not at its prompt yet: keystrokes still wait. The timer that sends
   * them (PROMPT_WAIT_MS after `created`, or after the latest output when they hold a long line).
   */
  let awaitingPrompt = null
  /** While awaiting the prompt, the output's last characters: LINE_EDITOR_ON may come in two frames. */
  let outputTail = ''
  let keys = ''
  /** Why keys typed before the shell were not kept (past MAX_EARLY_INPUT), said once the shell is there. */
  let dropped = ''

  /** Whether `text` has a line the terminal's line mode would cut (LINE_MODE_MAX bytes of UTF-8). */
  const holdsLongLine = (text) =>
    text.split(/[\r\n]/).some((line) => line.length * 3 > LINE_MODE_MAX && utf8.encode(line).length > LINE_MODE_MAX)

  /** The shell is ready for what was typed (or PROMPT_WAIT_MS passed in quiet): it goes out. */
  function shellReady() {
    clearTimeout(awaitingPrompt)
    awaitingPrompt = null
    const [sent, unsent] = [keys, dropped]
    keys = ''
    dropped = ''
    ready(sent, unsent)
  }

  return {
    /** A shell is on its way: keys typed from now on wait for it. */
    expect() {
      creating = true
    },
    /** Whether a create is out and no shell has come of it yet. */
    get creating() {
      return creating
    },
    /** Whether the shell has started and the keys still wait for its prompt. */
    get starting() {
      return awaitingPrompt !== null
    },
    /**
     * Keep a key typed before the shell is ready. Past MAX_EARLY_INPUT it is dropped, and so is every
     * key after it until the shell is ready: a line without its middle must not run.
     */
    keep(data) {
      if (!dropped && keys.length + data.length <= MAX_EARLY_INPUT) keys += data
      else dropped = `typed before the shell was ready and not sent: at most ${MAX_EARLY_INPUT} characters wait for it`
    },
    /** The shell started (`created`): the keys wait for its prompt, at most PROMPT_WAIT_MS of silence. */
    started() {
      creating = false
      awaitingPrompt = setTimeout(shellReady, PROMPT_WAIT_MS)
      outputTail = ''
    },
    /** Output while the shell starts: the keys go out now, or at its prompt when they hold a long line. */
    output(data) {
      if (awaitingPrompt === null) return
      const seen = outputTail + data
      outputTail = seen.slice(-(LINE_EDITOR_ON.length - 1))
      if (!holdsLongLine(keys) || seen.includes(LINE_EDITOR_ON)) return shellReady()
      clearTimeout(awaitingPrompt)
      awaitingPrompt = setTimeout(shellReady, PROMPT_WAIT_MS)
    },
    /** No shell is coming (no ticket, the connection closed, the shell exited): what was typed for it is dropped. */
    cancel() {
      creating = false
      clearTimeout(awaitingPrompt)
      awaitingPrompt = null
      keys = ''
      dropped = ''
    },
  }
}
