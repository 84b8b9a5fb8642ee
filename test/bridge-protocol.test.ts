import { readFileSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Socket } from 'node:net'
import t from 'tap'
import { alive, connect, NO_FORKS, startBridge, until } from './helpers/terminal.js'

const bridge = await startBridge({ TERMINAL_MAX_CONN: '8' })
t.teardown(() => bridge.stop())

t.test('create without a size starts an 80x24 login shell and answers created with its pid', async (t) => {
  const c = await connect(bridge.port)
  c.send({ type: 'create' })
  const created = await c.frame('created')
  t.same(Object.keys(created).sort(), ['pid', 'type'])
  t.ok(Number.isInteger(created.pid) && (created.pid as number) > 1, 'pid is an integer')
  t.match(await c.run('stty size'), /^24 80\r?\n/)
  t.match(await c.run('shopt -q login_shell && echo LOGIN'), /^LOGIN/)
  c.ws.close()
})

t.test('create with one size: the other is its default (80 columns, 24 rows)', async (t) => {
  for (const [frame, size] of [[{ type: 'create', cols: 100 }, /^24 100\r?\n/], [{ type: 'create', rows: 30 }, /^30 80\r?\n/]] as const) {
    const c = await connect(bridge.port)
    c.send(frame)
    await c.frame('created')
    t.match(await c.run('stty size'), size, JSON.stringify(frame))
    c.ws.close()
  }
})

t.test('create with a size, then resize: stty size follows both', async (t) => {
  const c = await connect(bridge.port)
  c.send({ type: 'create', cols: 100, rows: 30 })
  await c.frame('created')
  t.match(await c.run('stty size'), /^30 100\r?\n/)
  c.send({ type: 'resize', cols: 120, rows: 40 })
  t.match(await c.run('stty size'), /^40 120\r?\n/)
  c.send({ type: 'resize', cols: 1, rows: 1000 })
  t.match(await c.run('stty size'), /^1000 1\r?\n/)
  c.ws.close()
})

t.test('input, resize and kill before create are error frames, and nothing is spawned', async (t) => {
  const c = await connect(bridge.port)
  for (const frame of [{ type: 'input', data: 'ls\r' }, { type: 'resize', cols: 80, rows: 24 }, { type: 'kill' }]) {
    const at = c.frames.length
    c.send(frame)
    const error = await c.frame('error', at)
    t.same(error, { type: 'error', message: `no terminal: send create before ${frame.type}` })
  }
  t.notOk(c.frames.some((f) => f.type === 'created' || f.type === 'output'), 'no shell, no output')
  c.ws.close()
})

t.test('bad frames are error frames and the connection stays', async (t) => {
  const c = await connect(bridge.port)
  const bad: [unknown, RegExp][] = [
    ['not json', /^frame is not JSON$/],
    ['[1,2]', /^frame is not a JSON object$/],
    ['"create"', /^frame is not a JSON object$/],
    ['null', /^frame is not a JSON object$/],
    [{ cols: 80 }, /^frame has no string "type"$/],
    [{ type: 7 }, /^frame has no string "type"$/],
    [{ type: 'launch' }, /^unknown frame type "launch"$/],
    [{ type: 'create', cols: 0, rows: 24 }, /^invalid create frame: cols /],
    [{ type: 'create', cols: -5, rows: 24 }, /^invalid create frame: cols /],
    [{ type: 'create', cols: 80.5, rows: 24 }, /^invalid create frame: cols /],
    [{ type: 'create', cols: 1001, rows: 24 }, /^invalid create frame: cols /],
    [{ type: 'create', cols: 80, rows: 1e9 }, /^invalid create frame: rows /],
    [{ type: 'create', cols: '80', rows: 24 }, /^invalid create frame: cols /],
    [{ type: 'create', cols: null }, /^invalid create frame: cols /],
    [{ type: 'input', data: 5 }, /^invalid input frame: data /],
    [{ type: 'input' }, /^invalid input frame: data is required$/],
    [{ type: 'resize', cols: 80 }, /^invalid resize frame: rows is required$/],
    [{ type: 'resize' }, /^invalid resize frame: cols is required$/],
    [{ type: 'ack' }, /^invalid ack frame: bytes is required$/],
    [{ type: 'ack', bytes: -1 }, /^invalid ack frame: bytes /],
    // A field the frame does not have is a bad field: a typo must not pass for the default.
    [{ type: 'create', colums: 120, rows: 40 }, /^invalid create frame: colums is not a field of this frame$/],
    [{ type: 'input', data: 'x', extra: 1 }, /^invalid input frame: extra is not a field of this frame$/],
    [{ type: 'kill', signal: 9 }, /^invalid kill frame: signal is not a field of this frame$/],
    [{ type: 'resize', cols: 80, rows: 24, ['x'.repeat(5000)]: 1 }, new RegExp(`^invalid resize frame: ${'x'.repeat(40)} is not a field of this frame$`)],
    [{ type: 'ack', bytes: 1, __proto__: null, constructor: 1 }, /^invalid ack frame: constructor is not a field of this frame$/],
  ]
  for (const [frame, message] of bad) {
    const at = c.frames.length
    c.send(frame)
    const error = await c.frame('error', at)
    t.match(error, { type: 'error', message }, JSON.stringify(frame))
    t.same(Object.keys(error).sort(), ['message', 'type'])
  }
  const at = c.frames.length
  c.ws.send(Buffer.from('{"type":"kill"}'), { binary: true })
  t.match(await c.frame('error', at), { message: /^binary frames are not accepted/ })
  t.notOk(c.frames.some((f) => f.type === 'created'), 'no bad create spawned a shell')
  t.equal(c.closed, null, 'still open')
  c.send({ type: 'create' })
  await c.frame('created')
  t.match(await c.run('echo still-$((40+2))'), /^still-42/)
  c.ws.close()
})

t.test('a resize to a size outside 1-1000 or not an integer is an error frame, and the size stays as it was', async (t) => {
  const c = await connect(bridge.port)
  c.send({ type: 'create', cols: 100, rows: 30 })
  await c.frame('created')
  const bad: ['cols' | 'rows', unknown][] = [['cols', 0], ['rows', 0], ['cols', 1001], ['rows', 1001], ['rows', 2.5], ['cols', '80'], ['cols', -1]]
  for (const [field, value] of bad) {
    const frame = { type: 'resize', cols: 120, rows: 40, [field]: value }
    const at = c.frames.length
    c.send(frame)
    t.match(await c.frame('error', at), { message: new RegExp(`^invalid resize frame: ${field} `) }, JSON.stringify(frame))
  }
  t.match(await c.run('stty size'), /^30 100\r?\n/, 'still 100x30')
  t.equal(c.closed, null, 'still open')
  c.ws.close()
})

t.test('a client that floods bad frames and never reads: once the socket buffers are full, error frames past a few hundred queued are dropped, memory stays bounded', async (t) => {
  const status = (): string => readFileSync(`/proc/${bridge.child.pid}/status`, 'utf8')
  const rss = (): number => Number(/VmRSS:\s+(\d+)/.exec(status())![1]) / 1024
  const cpu = (): string => readFileSync(`/proc/${bridge.child.pid}/stat`, 'utf8').split(') ')[1]!.split(' ').slice(11, 13).join(' ')
  const c = await connect(bridge.port)
  const socket = (c.ws as unknown as { _socket: Socket })._socket
  socket.pause()
  const before = rss()
  let peak = before
  const sampler = setInterval(() => (peak = Math.max(peak, rss())), 50)
  // Each answered with a ~50-byte error frame, every one of which was queued (100,000 held 67 MiB;
  // 400,000 would hold 270 MiB; with the limit, the growth is the garbage of reading them, 25-50 MiB).
  const frames = 400_000
  for (let i = 0; i < frames; i++) c.ws.send('x')
  c.send({ type: 'create' })
  await until(() => c.ws.bufferedAmount === 0, 60_000, 'the frames to be sent')
  // Until the bridge has read them all: its CPU time stops moving.
  let last = ''
  await until(async () => {
    const now = cpu()
    const idle = now === last
    last = now
    await sleep(300)
    return idle
  }, 60_000, 'the bridge to go idle')
  clearInterval(sampler)
  t.ok(peak - before < 100, `the bridge grew at most ${(peak - before).toFixed(1)} MiB`)
  socket.resume()
  await c.frame('created', 0, 30_000)
  t.pass('the connection stays, and create works once the client reads')
  // What the kernel's socket buffers took before they were full (85,000-114,000 of these small
  // frames); of the rest, at most MAX_QUEUED_ERRORS waited in the bridge.
  const errors = c.frames.filter((f) => f.type === 'error').length
  t.ok(errors > 0 && errors < frames / 2, `${errors} of ${frames} error frames reached the client`)
  // The drop is while the queue is full, not for good: once the client has read what was queued,
  // a bad frame is answered again (the count of queued error frames went down as they left).
  const at = c.frames.length
  c.send('not json')
  t.same(await c.frame('error', at), { type: 'error', message: 'frame is not JSON' }, 'a later bad frame is answered')
  c.ws.close()
})

t.test('a client that reads gets an error frame for every bad frame of a burst, in order', async (t) => {
  const c = await connect(bridge.port)
  const frames = 20_000
  for (let i = 0; i < frames; i++) c.ws.send(i % 2 ? 'x' : '{"type":"input","data":"ls"}')
  c.send({ type: 'create' })
  await c.frame('created', 0, 30_000)
  const errors = c.frames.filter((f) => f.type === 'error').map((f) => f.message)
  t.equal(errors.length, frames, 'as many error frames as bad frames')
  t.ok(errors.every((m, i) => m === (i % 2 ? 'frame is not JSON' : 'no terminal: send create before input')), 'each answers its own frame')
  c.ws.close()
})

t.test('a second create is an error frame; after exit, create starts a new shell', async (t) => {
  const c = await connect(bridge.port)
  c.send({ type: 'create' })
  const first = await c.frame('created')
  let at = c.frames.length
  c.send({ type: 'create', cols: 90, rows: 20 })
  t.same(await c.frame('error', at), { type: 'error', message: 'a terminal is already running on this connection' })
  t.match(await c.run('stty size'), /^24 80/, 'the running shell was not replaced')
  at = c.frames.length
  c.send({ type: 'input', data: 'exit 3\r' })
  t.same(await c.frame('exit', at), { type: 'exit', code: 3, signal: null })
  at = c.frames.length
  c.send({ type: 'input', data: 'ls\r' })
  t.same(await c.frame('error', at), { type: 'error', message: 'no terminal: send create before input' })
  at = c.frames.length
  c.send({ type: 'create', cols: 90, rows: 20 })
  const second = await c.frame('created', at)
  t.not(second.pid, first.pid, 'a new shell')
  t.match(await c.run('stty size'), /^20 90/)
  const started = bridge.logs.filter((l) => l.event === 'terminal.shell' && (l.pid === first.pid || l.pid === second.pid))
  t.match(started, [{ user: 'dev', pid: first.pid, time: /^\d{4}-/ }, { user: 'dev', pid: second.pid, time: /^\d{4}-/ }], 'each shell\'s start is logged')
  c.ws.close()
  await until(() => bridge.logs.some((l) => l.event === 'terminal.session' && l.pid === second.pid), 5_000, 'the session line')
  t.equal(bridge.logs.filter((l) => l.event === 'terminal.session' && (l.pid === first.pid || l.pid === second.pid)).length, 1, 'one session line for the connection, naming its last shell')
})

t.test('kill ends the shell: exit carries the signal number', async (t) => {
  const c = await connect(bridge.port)
  c.send({ type: 'create' })
  const created = await c.frame('created')
  await c.run('true')
  const at = c.frames.length
  c.send({ type: 'kill' })
  const exit = await c.frame('exit', at)
  t.same(exit, { type: 'exit', code: 0, signal: 1 }, 'SIGHUP is signal 1')
  t.equal(c.closed, null, 'the connection stays after exit')
  t.throws(() => process.kill(created.pid as number, 0), 'the shell is gone')
  c.ws.close()
})

t.test('a frame over 1 MiB closes the connection with 1009', async (t) => {
  const c = await connect(bridge.port)
  c.send({ type: 'create' })
  await c.frame('created')
  c.send({ type: 'input', data: 'x'.repeat(1024 * 1024 + 1) })
  t.equal((await c.whenClosed()).code, 1009)
})

t.test('a frame of 1 MiB and one byte is over the limit: 1009', async (t) => {
  const c = await connect(bridge.port)
  t.teardown(() => c.ws.terminate())
  const over = '{"type":"kill"' + ' '.repeat(1024 * 1024 - 14) + '}'
  t.equal(Buffer.byteLength(over), 1024 * 1024 + 1)
  c.send(over)
  t.equal((await c.whenClosed(30_000)).code, 1009)
  t.same(c.frames, [], 'the frame was not read')
})

t.test('input counts as waiting only until the shell has read it: 1.8 MB typed in three frames into a program that reads is all taken', async (t) => {
  const c = await connect(bridge.port)
  t.teardown(() => c.ws.terminate())
  c.send({ type: 'create' })
  await c.frame('created')
  await c.run('stty -icanon -echo')
  const at = c.frames.length
  c.send({ type: 'input', data: 'cat >/dev/null\r' })
  for (let i = 0; i < 3; i++) {
    await sleep(500)
    c.send({ type: 'input', data: 'x'.repeat(600_000) })
  }
  await sleep(500)
  const mark = c.output.length
  c.send({ type: 'input', data: '\x03' })
  // Ctrl-C flushes the terminal's input queue: the next command waits for the prompt.
  await c.until(() => c.output.indexOf('$ ', mark) >= 0, 10_000, 'the prompt after Ctrl-C')
  t.match(await c.run('echo read'), /^read/, 'the shell takes input after it')
  t.same(c.frames.slice(at).filter((f) => f.type === 'error'), [], 'no input refused (1 MiB is what may wait unread, not what may be typed)')
})

t.test('a frame of exactly 1 MiB is not over the limit: it is read and answered, and the connection stays', async (t) => {
  const c = await connect(bridge.port)
  // Padded with JSON whitespace to 1,048,576 bytes: answered like any kill before create.
  const exact = '{"type":"kill"' + ' '.repeat(1024 * 1024 - 15) + '}'
  t.equal(Buffer.byteLength(exact), 1024 * 1024)
  c.send(exact)
  await c.until(() => c.closed !== null || c.frames.some((f) => f.type === 'error'), 30_000, 'an answer or a close')
  t.equal(c.closed, null, 'not closed (1009 is for a frame over 1 MiB)')
  t.same(c.frames, [{ type: 'error', message: 'no terminal: send create before kill' }], 'the frame was read')
  c.ws.close()
})

t.test('a text frame that is not UTF-8 closes the connection with 1007 (RFC 6455), and its shell ends', async (t) => {
  const c = await connect(bridge.port)
  c.send({ type: 'create' })
  const pid = (await c.frame('created')).pid as number
  c.ws.send(Buffer.from([0x7b, 0xff, 0xfe, 0x7d]), { binary: false })
  t.equal((await c.whenClosed()).code, 1007)
  // The shell's own first output (its prompt) may come before the close; no frame answers the bad one.
  t.same(c.frames.filter((f) => f.type !== 'output').map((f) => f.type), ['created'], 'no frame answers it')
  await until(() => !alive(pid), 5_000, 'the shell to end')
})

t.test('a shell that does not read its input: past 1 MiB waiting, input is refused, and kill and close still work', async (t) => {
  for (const ending of ['kill', 'close'] as const) {
    const c = await connect(bridge.port)
    c.send({ type: 'create' })
    const shellPid = (await c.frame('created')).pid as number
    // Raw mode: the line discipline keeps no limit, so the shell's terminal takes what it can and
    // the rest waits. The shell becomes a program that never reads its input.
    c.send({ type: 'input', data: "stty raw -echo; echo 'READ''Y'; exec sleep 1000\r" })
    await c.until(() => c.output.includes('READY'), 10_000, 'the shell to start sleeping')
    c.send({ type: 'input', data: 'x'.repeat(1_000_000) })
    c.send({ type: 'input', data: 'x'.repeat(200_000) })
    await sleep(200)
    t.notOk(c.frames.some((f) => f.type === 'error'), `${ending}: up to the mark, input is taken`)
    const at = c.frames.length
    c.send({ type: 'input', data: 'x'.repeat(200_000) })
    t.match(await c.frame('error', at), { type: 'error', message: /^input refused: the shell has not read the \d+ bytes before it yet$/ }, `${ending}: input past the mark is refused`)
    t.equal(c.closed, null, `${ending}: the connection stays`)
    if (ending === 'kill') {
      const before = c.frames.length
      c.send({ type: 'kill' })
      t.match(await c.frame('exit', before, 5_000), { type: 'exit' }, 'kill is read and answered with exit')
      c.ws.close()
    } else {
      c.ws.terminate()
    }
    let deadline = Date.now() + 5_000
    while (alive(shellPid) && Date.now() < deadline) await sleep(50)
    t.notOk(alive(shellPid), `${ending}: the shell (now the program) is gone`)
    deadline = Date.now() + 5_000
    const health = async (): Promise<{ connections: number }> => (await fetch(`http://127.0.0.1:${bridge.port}/`)).json() as Promise<{ connections: number }>
    while ((await health()).connections > 0 && Date.now() < deadline) await sleep(50)
    t.equal((await health()).connections, 0, `${ending}: the connection's place is free again`)
  }
})

t.test('input of just under 1 MiB is accepted', async (t) => {
  const c = await connect(bridge.port)
  c.send({ type: 'create' })
  await c.frame('created')
  await c.run('stty -icanon -echo; exec 3>/dev/null')
  c.send({ type: 'input', data: 'y'.repeat(1024 * 1024 - 100) })
  await sleep(200)
  t.equal(c.closed, null)
  c.ws.close()
})

t.test('a shell that cannot be started: an error frame and a spawn_failed line, and the connection stays for another try', { skip: process.getuid?.() !== 0 && 'needs root' }, async (t) => {
  // Once it is TERMINAL_USER the bridge may fork nothing, so node-pty's forkpty fails.
  const failing = await startBridge({}, NO_FORKS)
  t.teardown(() => failing.stop())
  const c = await connect(failing.port)
  c.send({ type: 'create', cols: 80, rows: 24 })
  t.same(await c.frame('error'), { type: 'error', message: 'the shell could not be started' })
  await until(() => failing.logs.some((l) => l.event === 'terminal.spawn_failed'), 5_000, 'the spawn_failed line')
  const failed = failing.logs.find((l) => l.event === 'terminal.spawn_failed')!
  t.equal(failed.user, 'dev', 'the line names the user')
  t.ok(typeof failed.error === 'string' && failed.error !== '', `and why (${String(failed.error)})`)
  t.match(await (await fetch(`${failing.url}/`)).json(), { status: 'ok', connections: 1 }, 'the bridge serves on, the connection counted')
  // No terminal came of it: input is refused as before a create, and a create is a new try.
  let at = c.frames.length
  c.send({ type: 'input', data: 'ls\r' })
  t.same(await c.frame('error', at), { type: 'error', message: 'no terminal: send create before input' })
  at = c.frames.length
  c.send({ type: 'create' })
  t.same(await c.frame('error', at), { type: 'error', message: 'the shell could not be started' })
  t.notOk(c.frames.some((f) => f.type === 'created' || f.type === 'output'), 'no shell, no output')
  t.equal(c.closed, null, 'the connection stays')
  c.ws.close()
  await until(() => failing.logs.some((l) => l.event === 'terminal.session'), 5_000, 'the session line')
  t.match(failing.logs.find((l) => l.event === 'terminal.session'), { user: 'dev', pid: null, bytesIn: 0, bytesOut: 0 })
})
