import { readdirSync, readFileSync, readlinkSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'
import net from 'node:net'
import t, { type Test } from 'tap'
import { ACK_WINDOW_MAX, ACK_WINDOW_MIN, ACK_WINDOW_START, AckWindow } from '../lib/bridge/ack-window.js'
import { OutputBatcher } from '../lib/bridge/output.js'
import { alive, connect, readPaced, startBridge, type Frame, type TermClient, until } from './helpers/terminal.js'

/** Characters `seq 1 n` writes to a terminal: each number and CR LF. */
function seqChars(n: number): number {
  let chars = 0
  for (let i = 1; i <= n; i++) chars += String(i).length + 2
  return chars
}
/** The text of the output frames among `frames[from, to)`. */
const outputOf = (frames: Frame[], from: number, to: number): string =>
  frames.slice(from, to).filter((f) => f.type === 'output').map((f) => f.data as string).join('')
const bridge = await startBridge({ TERMINAL_MAX_CONN: '8' })
t.teardown(() => bridge.stop())

function rssMiB(pid: number): number {
  const kb = /VmRSS:\s+([0-9]+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]
  return Number(kb) / 1024
}

/** A shell on a bridge of its own (stopped at the test's end), for measuring the bridge's memory. */
async function freshShell(t: Test): Promise<{ c: TermClient; pid: number }> {
  const fresh = await startBridge()
  t.teardown(() => fresh.stop())
  const c = await connect(fresh.port)
  c.send({ type: 'create', cols: 200, rows: 50 })
  await c.frame('created')
  return { c, pid: fresh.child.pid! }
}

async function shell(): Promise<TermClient> {
  const c = await connect(bridge.port)
  c.send({ type: 'create', cols: 200, rows: 50 })
  await c.frame('created')
  return c
}

/** Ctrl-C the flood of an acking client, acking everything from then on so the prompt gets through; the shell answers; close. */
async function endFlood(t: Test, c: TermClient): Promise<void> {
  c.send({ type: 'input', data: '\x03' })
  const acker = setInterval(() => c.send({ type: 'ack', bytes: 1 << 30 }), 20)
  t.match(await c.run('echo done-$((2*3))', 20_000), /^done-6/, 'the shell answers after the Ctrl-C')
  clearInterval(acker)
  c.ws.close()
}

t.test('long runs of multi-byte characters arrive whole, without U+FFFD', async (t) => {
  const c = await shell()
  const out = await c.run("yes 'é€😀ü漢字' | head -n 200000", 60_000)
  t.notOk(out.includes('\uFFFD'), 'no replacement character')
  const lines = out.split('\r\n').filter((l) => l !== '')
  t.equal(lines.length, 200_000)
  t.ok(lines.every((l) => l === 'é€😀ü漢字'), 'every line intact')
  c.ws.close()
})

t.test('a character cut short by the end of the output arrives as U+FFFD before exit, not dropped', async (t) => {
  const c = await shell()
  t.teardown(() => c.ws.terminate())
  // exec: the shell's own "logout" would follow the cut character and complete its decoding.
  c.send({ type: 'input', data: "exec printf 'cut:\\342\\202'\r" })
  t.match(await c.frame('exit', 0, 10_000), { type: 'exit', code: 0 })
  t.match(c.output, /cut:\uFFFD$/, 'the two bytes of a three-byte character are one U+FFFD at the end')
})

t.test('every byte of a fast command reaches the client before exit: `seq 1 2000000; exit`, 10 runs of 10', async (t) => {
  const c = await connect(bridge.port)
  const expected = seqChars(2_000_000)
  for (let run = 1; run <= 10; run++) {
    const at = c.frames.length
    c.output = ''
    c.send({ type: 'create' })
    await c.frame('created', at)
    c.send({ type: 'input', data: 'seq 1 2000000; exit\r' })
    await c.frame('exit', at, 60_000)
    const from = c.output.indexOf('1\r\n2\r\n3\r\n4\r\n')
    const to = c.output.indexOf('2000000\r\n', from) + '2000000\r\n'.length
    t.ok(from > 0 && to > from, `run ${run}: the first and last lines arrived`)
    t.equal(to - from, expected, `run ${run}: all ${expected} characters`)
  }
  c.ws.close()
})

t.test('a shell whose last write ends it (`exec seq 1 300000`): every byte before exit, and nothing after it, 10 runs', async (t) => {
  // The end of file comes while the last of a flood is still batched: it goes out before exit.
  const c = await connect(bridge.port)
  const expected = seqChars(300_000)
  for (let run = 1; run <= 10; run++) {
    const at = c.frames.length
    c.send({ type: 'create' })
    await c.frame('created', at)
    c.send({ type: 'input', data: 'exec seq 1 300000\r' })
    const exit = await c.frame('exit', at, 60_000)
    const output = outputOf(c.frames, at, c.frames.indexOf(exit))
    const from = output.indexOf('1\r\n2\r\n3\r\n4\r\n')
    const to = output.indexOf('300000\r\n', from) + '300000\r\n'.length
    t.ok(from > 0 && to > from && to - from === expected, `run ${run}: all ${expected} characters before exit`)
  }
  await sleep(300)
  const after = c.frames.map((f, i) => (f.type === 'exit' ? c.frames[i + 1]?.type ?? 'nothing' : null)).filter((f) => f !== null)
  t.same(after, [...Array(9).fill('created'), 'nothing'], 'each exit is the last frame of its shell')
  c.ws.close()
})

/** How many PTY masters process `pid` holds open. */
function ptyMasters(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).filter((fd) => {
    try {
      return readlinkSync(`/proc/${pid}/fd/${fd}`) === '/dev/ptmx'
    } catch {
      return false // closed while we looked
    }
  }).length
}

t.test('a shell that exits while its output waits in the paused PTY (the ack window full): every byte, then exit, without another ack, and the PTY is closed', async (t) => {
  const { c, pid: bridgePid } = await freshShell(t)
  const pid = c.frames.find((f) => f.type === 'created')!.pid as number
  await c.run('true')
  t.equal(ptyMasters(bridgePid), 1, 'the bridge holds the shell\'s PTY')
  // An acking client, everything so far acked, that then stops acking.
  c.send({ type: 'ack', bytes: c.output.length })
  // Just past the window (it starts at ACK_WINDOW_START and has no pace to grow by): the PTY is
  // paused with at most the last few of the a's unread. What the shell writes then, seq's lines,
  // waits in the PTY: more than one read's worth, little enough for the PTY's buffer (about 18 KB
  // here) to take it all, so the shell exits with it queued.
  const as = ACK_WINDOW_START + 4_000
  c.send({ type: 'input', data: `head -c ${as} /dev/zero | tr '\\0' a; sleep 1; seq 1 2000; exit\r` })
  await until(() => !alive(pid), 20_000, 'the shell to exit')
  const exit = await c.frame('exit', 0, 10_000)
  t.same(exit, { type: 'exit', code: 0, signal: null }, 'exit comes though the client has not acked since')
  t.equal(ptyMasters(bridgePid), 0, 'and the PTY\'s descriptor is closed')
  const exitAt = c.frames.indexOf(exit)
  await sleep(300)
  t.same(c.frames.slice(exitAt + 1), [], 'no frame after exit')
  const output = outputOf(c.frames, 0, exitAt)
  const end = output.indexOf('a1\r\n2\r\n3\r\n') + 1
  let start = end
  while (output[start - 1] === 'a') start--
  t.equal(end - start, as, 'every a before exit')
  t.equal(output.indexOf('\n2000\r\n', end) + '\n2000\r\n'.length - end, seqChars(2000), 'and all of seq before exit')
  c.ws.close()
})

t.test('a kill while the window holds a flood back ends the shell, and exit comes with the PTY closed, without another ack', async (t) => {
  // Found by an audit: the PTY's descriptor stayed open, and exit unsent, until the client acked again.
  const { c, pid: bridgePid } = await freshShell(t)
  await c.run('true')
  c.send({ type: 'ack', bytes: c.output.length })
  c.send({ type: 'input', data: 'yes "$(printf "%0100d" 0)"\r' })
  await sleep(1_000)
  const held = c.output.length
  await sleep(300)
  t.ok(c.output.length - held < 70_000, 'the window holds the flood back')
  const from = c.frames.length
  c.send({ type: 'kill' })
  const exit = await c.frame('exit', from, 10_000)
  t.match(exit, { type: 'exit', code: Number, signal: 1 }, 'the shell ended by the hang-up')
  t.equal(ptyMasters(bridgePid), 0, 'the PTY\'s descriptor is closed')
  t.equal(c.closed, null, 'the connection stays')
  t.equal(await nextCreate(c), 'created', 'and takes a new shell')
  c.ws.close()
})

/** Send create on `c` (its shell ended); the type of the frame that answers. */
async function nextCreate(c: TermClient): Promise<string> {
  const from = c.frames.length
  c.send({ type: 'create' })
  await c.until(() => c.frames.slice(from).some((f) => f.type === 'created' || f.type === 'error'), 10_000, 'created')
  return c.frames.slice(from).find((f) => f.type === 'created' || f.type === 'error')!.type
}

t.test('a client that reads slowly while the shell prints without end keeps the bridge\'s memory bounded', async (t) => {
  const { c, pid } = await freshShell(t)
  await sleep(200)
  const before = rssMiB(pid)
  c.ws.pause() // stop reading the socket: the kernel buffers fill, then the bridge's
  c.send({ type: 'input', data: 'yes "$(printf "%0100d" 0)"\r' })
  let peak = before
  for (let i = 0; i < 40; i++) {
    await sleep(100)
    peak = Math.max(peak, rssMiB(pid))
  }
  t.ok(peak - before < 48, `RSS grew ${Math.round(peak - before)} MiB (from ${Math.round(before)} to ${Math.round(peak)})`)
  c.ws.resume()
  const mark = c.output.length
  await c.until(() => c.output.length > mark + 1_000_000, 20_000, 'output flowing again')
  c.send({ type: 'input', data: '\x03' })
  t.match(await c.run('echo after-$((6*7))', 60_000), /^after-42/, 'Ctrl-C stops it and the shell answers')
  c.ws.close()
})

t.test('a client that reads 5 MB/s and never acks keeps the bridge within a few MiB of where it started', async (t) => {
  // Output that waits in the bridge for the socket lives long enough for V8 to promote it, and
  // it is then held until a full collection: with 1 MiB allowed to wait, the bridge grew 12 MiB
  // in 3 s and 20 MiB in 5 s of this, before its first full collection.
  const { c, pid } = await freshShell(t)
  await c.run('true')
  const before = rssMiB(pid)
  const read = readPaced(c, 5 * 1024 * 1024)
  c.send({ type: 'input', data: 'yes "$(printf "%0100d" 0)"\r' })
  let peak = before
  for (let i = 0; i < 40; i++) {
    await sleep(100)
    peak = Math.max(peak, rssMiB(pid))
  }
  t.ok(read.chars > 5_000_000, `the client read ${read.chars} characters`)
  t.ok(peak - before < 10, `RSS grew ${(peak - before).toFixed(1)} MiB (from ${before.toFixed(1)} to ${peak.toFixed(1)})`)
  c.ws.terminate()
})

t.test('a client that acks is held to the window: unacknowledged output stays under its first size (ACK_WINDOW_START) until it acks', async (t) => {
  const c = await shell()
  c.send({ type: 'ack', bytes: 0 })
  c.send({ type: 'input', data: 'yes "$(printf "%0100d" 0)"\r' })
  await sleep(1_500)
  const held = c.output.length
  t.ok(held > ACK_WINDOW_START / 2, `output flowed up to the window (${held})`)
  t.ok(held < ACK_WINDOW_START + 2 * 65536 + 4096, `and stopped there (${held})`)
  await sleep(500)
  t.ok(c.output.length - held < 70_000, 'no more while nothing is acked')
  c.send({ type: 'ack', bytes: c.output.length })
  await c.until(() => c.output.length > held + ACK_WINDOW_START / 2, 10_000, 'more output after the ack')
  t.pass('acking opens the window again')
  await endFlood(t, c)
})

t.test('the PTY reads again once the unacknowledged output is below three quarters of the window, not before', async (t) => {
  const c = await shell()
  c.send({ type: 'ack', bytes: 0 })
  c.send({ type: 'input', data: 'yes "$(printf "%0100d" 0)"\r' })
  // Until output has stopped at the window (the frame that crossed it went out whole).
  let seen = -1
  await until(async () => {
    const still = c.output.length === seen
    seen = c.output.length
    await sleep(500)
    return still
  }, 30_000, 'the output to stop at the window')
  const held = c.output.length
  t.ok(held > ACK_WINDOW_START, `held past the window, ACK_WINDOW_START as yet (${held})`)
  // One character acked ends the window's first sample at a pace of next to nothing: the window
  // is ACK_WINDOW_MIN now, and the next ack, within the new sample's half second, does not move it.
  c.send({ type: 'ack', bytes: 1 })
  c.send({ type: 'ack', bytes: held - 1 - Math.round(ACK_WINDOW_MIN * 0.8) })
  await sleep(400)
  t.equal(c.output.length, held, `still held at four fifths of the window unacknowledged (${c.output.length - held} more)`)
  c.send({ type: 'ack', bytes: Math.round(ACK_WINDOW_MIN * 0.2) })
  // Three fifths now: reading again (it waited for a half, and a link with a round trip idled).
  await c.until(() => c.output.length > held, 5_000, 'more output')
  t.pass('output again at three fifths')
  await endFlood(t, c)
})

t.test('acks count characters: a client that acks all it renders of multi-byte output is never held by the window', async (t) => {
  const c = await shell()
  // As the page does: every output frame acked with its length in characters once rendered.
  c.ws.on('message', (data) => {
    const frame = JSON.parse(data.toString()) as { type: string; data?: string }
    if (frame.type === 'output') c.send({ type: 'ack', bytes: frame.data!.length })
  })
  c.send({ type: 'ack', bytes: 0 })
  // 2,000,000 characters, 5.2 MB as UTF-8: well past the window whichever of the two it counted.
  const out = await c.run("yes '漢字漢字漢字漢字' | head -n 200000", 120_000)
  t.equal(out.split('\r\n').filter((l) => l === '漢字漢字漢字漢字').length, 200_000, 'all of it arrived')
  c.ws.close()
})

t.test('the window follows a client that renders slowly: after a Ctrl-C in a flood, about half a second of its pace is left to come, not 1 MiB', async (t) => {
  // Found by a slow-network audit: with a fixed 1 MiB window, a page on a 1 Mbit/s link waited
  // 8-14 s for its prompt after Ctrl-C (46 s at 256 kbit/s), while 1 MiB of a flood drained.
  const c = await shell()
  await c.run('true')
  // A page that renders 100,000 characters a second, and acks what it has rendered.
  let rendered = c.output.length
  c.send({ type: 'ack', bytes: rendered })
  const pace = setInterval(() => {
    const step = Math.min(5_000, c.output.length - rendered)
    if (step <= 0) return
    rendered += step
    c.send({ type: 'ack', bytes: step })
  }, 50)
  t.teardown(() => clearInterval(pace))
  c.send({ type: 'input', data: 'yes "$(printf "%0100d" 0)"\r' })
  await sleep(4_000) // several of the window's samples of the client's pace
  const renderedAtCtrlC = rendered
  c.send({ type: 'input', data: '\x03' })
  t.match(await c.run('echo back-$((5*5))', 60_000), /^back-25/, 'the prompt comes back')
  const stopped = c.output.indexOf('^C', renderedAtCtrlC)
  t.ok(stopped > renderedAtCtrlC, 'the flood ended at the Ctrl-C')
  const leftToRender = stopped - renderedAtCtrlC
  t.ok(leftToRender < 200_000, `${leftToRender} characters were still to render at the Ctrl-C (the window about 50,000 at this pace)`)
})

t.test('an ack of more than was sent opens no credit: the window still holds the output that follows', async (t) => {
  const c = await shell()
  await c.run('true')
  // Everything sent so far, and far more than that.
  c.send({ type: 'ack', bytes: 2 ** 50 })
  const start = c.output.length
  c.send({ type: 'input', data: 'yes "$(printf "%0100d" 0)"\r' })
  await c.until(() => c.output.length - start > ACK_WINDOW_START / 2, 20_000, 'output up to the window')
  // Until output has stopped: the window is full (a bridge that took the over-ack as credit never stops).
  let seen = -1
  await until(async () => {
    const now = c.output.length
    if (now - start > 4 * 1024 * 1024) return true // far past the window: the check below fails
    const still = now === seen
    seen = now
    await sleep(1_000)
    return still
  }, 30_000, 'the output to stop at the window')
  const held = c.output.length - start
  t.ok(held < ACK_WINDOW_START + 2 * 65536 + 4096, `held at the window (${held} characters unacknowledged)`)
  await endFlood(t, c)
})

t.test('the ack window: half a second of the pace acked, within its bounds; a sample it did not hold back only widens it', async (t) => {
  const w = new AckWindow()
  t.equal(w.size, ACK_WINDOW_START, 'it starts at ACK_WINDOW_START')
  w.acked(0, 0)
  w.held()
  w.acked(200_000, 1_000) // 200,000 a second while held back: the client's pace
  t.equal(w.size, 100_000, 'half a second of it')
  w.acked(300_000, 1_200)
  t.equal(w.size, 100_000, 'measured over half a second at least')
  w.acked(320_000, 2_000) // 40,000 a second, not held back: the shell wrote that little
  t.equal(w.size, 100_000, 'a sample the window did not hold back does not narrow it')
  w.held()
  w.acked(340_000, 3_000) // 20,000 a second, held back: the client is that slow now
  t.equal(w.size, ACK_WINDOW_MIN, 'narrowed, to the least at most')
  w.acked(340_000 + 50_000_000, 4_000)
  t.equal(w.size, ACK_WINDOW_MAX, 'widened, to the most at most')
  w.restart()
  w.acked(0, 5_000)
  t.equal(w.size, ACK_WINDOW_MAX, 'a new shell keeps the pace learned')
})

t.test('under a flood no frame carries more than 64 KiB', async (t) => {
  const frames: string[] = []
  const batcher = new OutputBatcher((data) => frames.push(data))
  batcher.push(Buffer.alloc(20_000, 0x61))
  batcher.flush() // a run of 20 KB: output is now a stream, batched
  // Two-byte characters: a cap counted in characters let a frame reach 128 KiB.
  const read = Buffer.from('é'.repeat(2_047))
  for (let i = 0; i < 100; i++) batcher.push(read)
  batcher.flush()
  t.equal(frames.join(''), 'a'.repeat(20_000) + 'é'.repeat(204_700), 'everything went out, in order')
  t.ok(frames.every((f) => Buffer.byteLength(f) <= 65_536), `the largest frame ${Math.max(...frames.map((f) => Buffer.byteLength(f)))} bytes`)
})

t.test('a flood that ends on the size cap leaves Node\'s immediates working', async (t) => {
  // The flood's batching timer, cancelled when a frame fills up, must be cancelled as a timer: as
  // an immediate it broke Node's count, and an immediate queued from a socket's close handler then
  // waited for the next unrelated event (here a 3 s timer) instead of running at once.
  const frames: number[] = []
  const batcher = new OutputBatcher((_data, bytes) => frames.push(bytes))
  batcher.push(Buffer.alloc(20_000, 0x61))
  batcher.flush() // a run of 20 KB: output is now a stream
  batcher.push(Buffer.alloc(100, 0x61)) // batched on a timer
  batcher.push(Buffer.alloc(70_000, 0x61)) // over the 64 KiB cap: flushed at once
  // What the timer held goes first; then 70,000 bytes (more than a PTY read gives) leave as a
  // 64 KiB frame and the rest, the PTY bytes counted on the first.
  t.same(frames, [20_000, 100, 70_000, 0], 'the capped flush sends what the timer was holding')
  const laterTimer = setTimeout(() => undefined, 3_000)
  t.teardown(() => clearTimeout(laterTimer))
  const delay = await new Promise<number>((resolve) => {
    setTimeout(() => resolve(Infinity), 1_500).unref()
    const server = net.createServer((socket) =>
      socket.on('close', () => {
        const closedAt = Date.now()
        setImmediate(() => resolve(Date.now() - closedAt))
        server.close()
      }),
    )
    server.listen(0, '127.0.0.1', () => {
      const client = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1', () => client.end())
    })
  })
  t.ok(delay < 500, `the immediate ran ${delay} ms after the close`)
  await sleep(50)
  t.same(frames, [20_000, 100, 70_000, 0], 'the cancelled timer sent nothing more')
})
