import { spawn, execFileSync, type ChildProcess } from 'node:child_process'
import { setTimeout as sleep } from 'node:timers/promises'
import { accessSync, chmodSync, constants, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import https from 'node:https'
import http from 'node:http'
import net from 'node:net'
import path from 'node:path'
import { literal, ROOT, tempDir } from './platform.js'

/** The shipped nginx site (systemd/nginx.conf). */
export const SITE_CONF = path.join(ROOT, 'systemd/nginx.conf')

/**
 * The nginx executable: from PATH, else from /usr/sbin or /sbin, where Debian installs it and
 * which a non-root account's PATH leaves out (/etc/profile), so `npm test` finds it as a developer
 * as it does as root.
 */
function nginxExecutable(): string {
  for (const dir of [...(process.env.PATH ?? '').split(':'), '/usr/sbin', '/sbin']) {
    if (!path.isAbsolute(dir)) continue
    try {
      accessSync(path.join(dir, 'nginx'), constants.X_OK)
      return path.join(dir, 'nginx')
    } catch {
      // not here
    }
  }
  return 'nginx'
}

/** A self-signed certificate for 127.0.0.1 and localhost, made with openssl in `dir`. */
export function makeCertificate(dir: string): { cert: string; key: string; pem: Buffer } {
  const cert = path.join(dir, 'cert.pem')
  const key = path.join(dir, 'key.pem')
  execFileSync('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '2',
    '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost',
    '-keyout', key, '-out', cert,
  ], { stdio: 'ignore' })
  return { cert, key, pem: readFileSync(cert) }
}

export interface SitePorts {
  https: number
  http: number
  platform: number
  terminal: number
}

/** A host name of 66 characters. */
const LONG_HOST = `${'p'.repeat(40)}.games.example-company.com`

/**
 * The shipped site with only what differs on a test machine replaced: listen addresses, upstream
 * ports, certificate and log paths. Every replacement must match, so a changed site cannot
 * silently slip past its test.
 */
export function siteConfig(ports: SitePorts, files: { cert: string; key: string; logDir: string }): string {
  let text = readFileSync(SITE_CONF, 'utf8')
  const swap = (from: string | RegExp, to: string, count: number): void => {
    const re = typeof from === 'string' ? new RegExp(literal(from), 'g') : from
    const found = text.match(re)?.length ?? 0
    if (found !== count) throw new Error(`systemd/nginx.conf: expected ${count} × ${String(from)}, found ${found}`)
    text = text.replace(re, to)
  }
  swap('listen 80;', `listen 127.0.0.1:${ports.http};`, 1)
  swap('listen [::]:80;', '', 1)
  swap('listen 443 ssl;', `listen 127.0.0.1:${ports.https} ssl;`, 1)
  swap('listen [::]:443 ssl;', '', 1)
  swap('server 127.0.0.1:3000;', `server 127.0.0.1:${ports.platform};`, 1)
  swap('server 127.0.0.1:7681;', `server 127.0.0.1:${ports.terminal};`, 1)
  swap(/\/etc\/letsencrypt\/live\/play\.example\.com\/fullchain\.pem/g, files.cert, 1)
  swap(/\/etc\/letsencrypt\/live\/play\.example\.com\/privkey\.pem/g, files.key, 1)
  swap(/\/var\/log\/nginx\//g, files.logDir + '/', 8)
  // The test's origin, and a long host name of the kind the README's sed puts there, which nginx
  // must fit in its map hash (nginx -t refused names of 39 characters and more in 64-byte buckets).
  swap('"https://play.example.com"  $http_origin;', `"https://127.0.0.1:${ports.https}"  $http_origin;\n    "https://${LONG_HOST}"  $http_origin;`, 1)
  return text
}

export interface RunningNginx {
  child: ChildProcess
  prefix: string
  /** Contents of the site's error log so far. */
  errorLog(): string
  /** Contents of the site's access log so far (nginx writes a line when a request ends). */
  accessLog(): string
  stop(): Promise<void>
}

/**
 * Run the real nginx as an ordinary foreground process with the site from `siteConfig`, wrapped
 * in a minimal main config whose paths all live in a temporary prefix. Resolves once the https
 * port accepts connections.
 */
export async function startNginx(ports: SitePorts, cert: { cert: string; key: string }): Promise<RunningNginx> {
  const prefix = tempDir('playfield-nginx-')
  // As root, nginx's workers run as an unprivileged user that must reach the temp directories.
  chmodSync(prefix, 0o755)
  const logDir = path.join(prefix, 'logs')
  mkdirSync(logDir)
  writeFileSync(path.join(prefix, 'site.conf'), siteConfig(ports, { ...cert, logDir }))
  const user = process.getuid?.() === 0 ? 'user www-data www-data;' : ''
  writeFileSync(path.join(prefix, 'nginx.conf'), [
    user,
    'worker_processes 1;',
    `pid ${prefix}/nginx.pid;`,
    `error_log ${logDir}/error.log;`,
    'events { worker_connections 256; }',
    'http {',
    `  client_body_temp_path ${prefix}/body;`,
    `  proxy_temp_path ${prefix}/proxy;`,
    `  fastcgi_temp_path ${prefix}/fastcgi;`,
    `  uwsgi_temp_path ${prefix}/uwsgi;`,
    `  scgi_temp_path ${prefix}/scgi;`,
    `  access_log ${logDir}/access.log;`,
    `  include ${prefix}/site.conf;`,
    '}',
    '',
  ].join('\n'))
  const args = ['-p', prefix, '-e', `${logDir}/error.log`, '-c', `${prefix}/nginx.conf`]
  const nginx = nginxExecutable()
  execFileSync(nginx, [...args, '-t', '-q'], { stdio: ['ignore', 'ignore', 'pipe'] })
  const child = spawn(nginx, [...args, '-g', 'daemon off;'], { stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d))
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  process.once('exit', () => child.kill('SIGKILL'))
  for (let tries = 0; ; tries++) {
    if (child.exitCode !== null) throw new Error(`nginx exited: ${stderr}`)
    if (await canConnect(ports.https)) break
    if (tries > 100) throw new Error(`nginx did not listen on ${ports.https}: ${stderr}`)
    await sleep(50)
  }
  return {
    child,
    prefix,
    errorLog: () => readFileSync(path.join(logDir, 'playfield.error.log'), 'utf8'),
    accessLog: () => readFileSync(path.join(logDir, 'playfield.access.log'), 'utf8'),
    async stop() {
      // SIGQUIT: graceful shutdown; nginx exits once open connections are done.
      if (child.exitCode === null) child.kill('SIGQUIT')
      await exited
    },
  }
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1')
    socket.once('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => resolve(false))
  })
}

export interface Answer {
  status: number
  headers: http.IncomingHttpHeaders
  body: string
}

export interface RequestOptions {
  headers?: Record<string, string>
  /** Sent as JSON, with Content-Type application/json unless given. */
  body?: unknown
  /** Sent as these bytes instead of `body`: with Content-Length, or chunked with `chunked`. */
  raw?: Buffer
  /** Send `raw` with Transfer-Encoding: chunked, in 64 KiB chunks. */
  chunked?: boolean
  /** Source address of the connection (any 127.x address works on Linux loopback). */
  localAddress?: string
  /** CA to trust; plain http when omitted. */
  ca?: Buffer
  /** The TLS server name to ask for and check the certificate against, when the URL's host is an address. */
  servername?: string
}

/** The size of each chunk `request` writes for a chunked body. */
const CHUNK_BYTES = 64 * 1024

/** One request over node:https (checking the certificate against `ca`) or node:http. */
export function request(method: string, url: string, options: RequestOptions = {}): Promise<Answer> {
  const headers: Record<string, string> = { ...options.headers }
  let payload: string | Buffer | undefined = options.raw
  if (options.body !== undefined) {
    payload = JSON.stringify(options.body)
    headers['content-type'] ??= 'application/json'
  }
  if (options.chunked) headers['transfer-encoding'] = 'chunked'
  const transport = url.startsWith('https:') ? https : http
  return new Promise((resolve, reject) => {
    const req = transport.request(url, {
      method,
      headers,
      ca: options.ca,
      servername: options.servername,
      localAddress: options.localAddress,
      agent: false,
    }, (res) => {
      let body = ''
      res.setEncoding('utf8').on('data', (d: string) => (body += d))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }))
    })
    req.on('error', reject)
    if (options.chunked && payload !== undefined) {
      const bytes = Buffer.from(payload)
      for (let at = 0; at < bytes.length; at += CHUNK_BYTES) req.write(bytes.subarray(at, at + CHUNK_BYTES))
      req.end()
    } else {
      req.end(payload)
    }
  })
}
