/**
 * The reference for the echo figure of `npm run bench:bridge`: the least a WebSocket bridge on
 * `ws` and node-pty can do per keystroke (each frame parsed and written to the PTY with
 * writeSync, each read sent as an `output` frame), with no tickets, limits, flow control or
 * session ending. Started by bench/bridge.ts as a child process; the PTY options come as JSON in
 * argv[2], and the listening port goes back over IPC.
 */
import { writeSync } from 'node:fs'
import { spawn, type IPtyForkOptions } from 'node-pty'
import { WebSocketServer } from 'ws'

const options = JSON.parse(process.argv[2]!) as IPtyForkOptions
const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false })
wss.on('listening', () => process.send!((wss.address() as { port: number }).port))
wss.on('connection', (ws) => {
  const pty = spawn('/bin/bash', ['-c', 'stty raw -echo; exec cat'], { ...options, encoding: null })
  const fd = (pty as unknown as { _fd: number })._fd
  pty.onData((data) => ws.send(JSON.stringify({ type: 'output', data: data.toString() })))
  ws.on('message', (data) => writeSync(fd, (JSON.parse(data.toString()) as { data: string }).data))
  ws.on('close', () => pty.kill('SIGKILL'))
})
process.on('disconnect', () => process.exit(0))
