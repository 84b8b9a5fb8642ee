import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { Representation } from '../catalogue/serialize.js'
import { escapeHtml, NO_STORE } from '../http/reply.js'

// The developer terminal's HTML: the page, the gate's refusal page, and the assets they name.

const require = createRequire(import.meta.url)
/** The page's own files: the source tree's lib/platform/terminal-page (tsc does not copy them to dist). */
const PAGE_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../lib/platform/terminal-page')
const XTERM_DIR = path.dirname(path.dirname(require.resolve('@xterm/xterm')))
const FIT_DIR = path.dirname(path.dirname(require.resolve('@xterm/addon-fit')))
const UNICODE11_DIR = path.dirname(path.dirname(require.resolve('@xterm/addon-unicode11')))

/** Served from the installed packages and the page directory; no CDN. */
export const ASSETS: Record<string, { file: string; type: string }> = {
  'xterm.js': { file: path.join(XTERM_DIR, 'lib/xterm.js'), type: 'text/javascript' },
  'xterm.css': { file: path.join(XTERM_DIR, 'css/xterm.css'), type: 'text/css' },
  'addon-fit.js': { file: path.join(FIT_DIR, 'lib/addon-fit.js'), type: 'text/javascript' },
  'addon-unicode11.js': { file: path.join(UNICODE11_DIR, 'lib/addon-unicode11.js'), type: 'text/javascript' },
  'widths.js': { file: path.join(PAGE_DIR, 'widths.js'), type: 'text/javascript' },
  'width-provider.js': { file: path.join(PAGE_DIR, 'width-provider.js'), type: 'text/javascript' },
  'early-input.js': { file: path.join(PAGE_DIR, 'early-input.js'), type: 'text/javascript' },
  'terminal.js': { file: path.join(PAGE_DIR, 'terminal.js'), type: 'text/javascript' },
  'terminal.css': { file: path.join(PAGE_DIR, 'terminal.css'), type: 'text/css' },
  'signin.js': { file: path.join(PAGE_DIR, 'signin.js'), type: 'text/javascript' },
}

/**
 * Scripts, styles and connections from this origin only. xterm's DOM renderer writes its theme
 * into <style> elements it creates, which CSP counts as inline style; scripts stay 'self' only.
 */
const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ')
/** The headers of the terminal page and the gate's refusal pages: never cached, never framed, no referrer. */
export const PAGE_HEADERS = {
  'content-security-policy': CSP,
  ...NO_STORE,
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
}

let page: string | undefined

/** The terminal page, its assets named by `assetUrl` (versioned: see assetUrl); made once. */
export function terminalPage(): string {
  return (page ??= pageHtml())
}

const pageHtml = (): string => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Playfield developer terminal</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${assetUrl('xterm.css')}">
<link rel="stylesheet" href="${assetUrl('terminal.css')}">
</head>
<body>
<header><h1>Playfield terminal</h1> <span id="status" role="status">starting</span> <button id="reconnect" type="button" hidden aria-describedby="status">Reconnect</button> <label id="reader-mode"><input type="checkbox" id="screen-reader"> Screen reader</label> <span id="keys">Esc then Tab leaves the terminal</span><span id="output-hidden" class="visually-hidden">Its output is read out only with the Screen reader box checked.</span></header>
<main id="terminal"></main>
<script src="${assetUrl('xterm.js')}"></script>
<script src="${assetUrl('addon-fit.js')}"></script>
<script src="${assetUrl('addon-unicode11.js')}"></script>
<script src="${assetUrl('widths.js')}"></script>
<script src="${assetUrl('width-provider.js')}"></script>
<script src="${assetUrl('early-input.js')}"></script>
<script src="${assetUrl('terminal.js')}"></script>
</body>
</html>
`

/**
 * The gate's refusal: why, and what the visitor can do here. Signed out, a form signs in (or
 * creates an account) through the auth API; signed in without admission, a button signs out, to
 * sign in as someone else. Either reloads the page, and the gate answers again. The form is
 * sent by signin.js as JSON; `method="post"` keeps a password out of the URL should a browser
 * ever send it natively (the CSP's form-action 'none' blocks that too).
 */
export function refusalPage(status: 401 | 403, reason: string): string {
  const title = status === 401 ? '401 Sign in required' : '403 Developer access required'
  const action = status === 401
    ? `<form id="signin" method="post">
<p class="field"><label for="username">Username</label> <input id="username" name="username" autocomplete="username" required autofocus aria-describedby="username-rule"> <small id="username-rule">3–24 letters, digits, _ or -</small></p>
<p class="field"><label for="password">Password</label> <input id="password" name="password" type="password" autocomplete="current-password" required aria-describedby="password-rule"> <small id="password-rule">8–256 characters for a new account</small></p>
<button type="submit" value="login">Sign in</button> <button type="submit" value="register">Create account</button>
</form>`
    : '<p><button id="signout" type="button">Sign out</button></p>'
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${title}</title><link rel="icon" href="data:,"><link rel="stylesheet" href="${assetUrl('terminal.css')}"></head>
<body class="refused"><main><h1>${title}</h1><p id="reason">${escapeHtml(reason)}</p>
${action}
<p id="problem" role="alert"></p></main>
<script src="${assetUrl('signin.js')}"></script>
</body>
</html>
`
}

const assetCache = new Map<string, { rep: Representation; version: string }>()

/**
 * An asset's bytes (compressed too, for a slow network: xterm.js is 489 KB, 113 KB in brotli) and
 * version (a hash of them), read once per process.
 */
export function assetContent(file: string): { rep: Representation; version: string } {
  let content = assetCache.get(file)
  if (!content) {
    const body = readFileSync(file)
    assetCache.set(file, (content = { rep: new Representation(body), version: createHash('sha256').update(body).digest('base64url').slice(0, 12) }))
  }
  return content
}

/**
 * Read every file of the page now (at the start, and by `bin/platform check`): an install without
 * one does not start, and `npm ci` under a running platform changes nothing it serves.
 */
export function loadTerminalAssets(): void {
  for (const asset of Object.values(ASSETS)) assetContent(asset.file)
}

/**
 * The URL the page names an asset by, with its version: after an upgrade the page (never cached)
 * names the new files, and a browser never runs an older terminal.js against a newer page.
 */
function assetUrl(name: string): string {
  return `/dev/terminal/assets/${name}?v=${assetContent(ASSETS[name]!.file).version}`
}
