// The developer terminal's refusal pages: sign in (or create an account) on the 401 page, sign
// out on the 403 page, through the platform's own JSON API (CONTRACT §3); the page reloads on
// success and the gate answers again. No form is submitted natively: the API takes JSON only.
'use strict'

const form = document.getElementById('signin')
const signOut = document.getElementById('signout')
const problem = document.getElementById('problem')

/**
 * POST `body` as JSON to an auth route; reload on 200, else show the error the API gave. The
 * buttons wait meanwhile: a second Enter would send the request again (a second register is 409).
 */
async function call(path, body) {
  problem.textContent = ''
  for (const input of document.querySelectorAll('input')) input.removeAttribute('aria-invalid')
  const buttons = document.querySelectorAll('button')
  // A disabled button loses the keyboard: it goes back where it was once the answer is shown.
  const focused = document.activeElement
  for (const button of buttons) button.disabled = true
  try {
    const res = await fetch(path, {
      method: 'POST',
      credentials: 'same-origin',
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    if (res.ok) return location.reload()
    const answer = await res.json().catch(() => ({}))
    const details = Array.isArray(answer.details) ? answer.details : []
    // A field the API names ("/password") is marked, and named in words a person reads.
    for (const d of details) form?.querySelector(`input[name="${CSS.escape(String(d.path).slice(1))}"]`)?.setAttribute('aria-invalid', 'true')
    const detail = details.length ? `: ${details.map((d) => `${String(d.path).slice(1)} ${d.message}`).join('; ')}` : ''
    problem.textContent = `${answer.error || `HTTP ${res.status}`}${detail}`
  } catch (err) {
    problem.textContent = `the platform cannot be reached (${err.message})`
  }
  for (const button of buttons) button.disabled = false
  if (focused instanceof HTMLElement) focused.focus()
}

if (form) {
  form.addEventListener('submit', (event) => {
    event.preventDefault()
    const create = event.submitter && event.submitter.value === 'register'
    void call(create ? '/api/auth/register' : '/api/auth/login', { username: form.elements.username.value, password: form.elements.password.value })
  })
}
if (signOut) signOut.addEventListener('click', () => void call('/api/auth/logout'))
