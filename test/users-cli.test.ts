import { mkdirSync, readdirSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import t from 'tap'
import { Client, runUsers, startPlatform, tempDir } from './helpers/platform.js'
import { signUp } from './helpers/accounts.js'

const dataDir = tempDir()
const platform = await startPlatform({ dataDir })
t.teardown(() => platform.stop())

/** Run `bin/platform users …` against the running platform's DATA_DIR. */
function users(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return usersIn(dataDir, ...args)
}

function usersIn(dir: string, ...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return runUsers({ DATA_DIR: dir }, ...args)
}

const roles = async (c: Client): Promise<string[]> => ((await (await c.get('/api/auth/session')).json()) as { user: { roles: string[] } }).user.roles

t.test('users grant works at once for a signed-in user, while the platform runs; revoke too', async (t) => {
  const c = new Client(platform.url)
  const user = await signUp(t, c, 'DevPerson')
  t.same(await roles(c), [])
  const granted = await users('grant', 'devperson', 'developer')
  t.equal(granted.code, 0, granted.stderr)
  t.equal(granted.stdout, `granted developer to DevPerson\nDevPerson\t${user.id}\tdeveloper\n`)
  t.same(await roles(c), ['developer'], 'the same cookie shows the role without signing in again')
  t.equal((await users('grant', 'DevPerson', 'admin')).code, 0)
  t.equal((await users('grant', 'DevPerson', 'admin')).code, 0, 'granting twice is fine')
  t.same(await roles(c), ['admin', 'developer'])
  const login = await new Client(platform.url).post('/api/auth/login', { username: 'DevPerson', password: 'correct horse' })
  t.same(((await login.json()) as { user: { roles: string[] } }).user.roles, ['admin', 'developer'], 'sign-in answers the roles')
  const revoked = await users('revoke', 'DevPerson', 'developer')
  t.equal(revoked.code, 0)
  t.equal(revoked.stdout, `revoked developer from DevPerson\nDevPerson\t${user.id}\tadmin\n`)
  t.same(await roles(c), ['admin'])
})

t.test('users list prints the accounts holding a role', async (t) => {
  const other = new Client(platform.url)
  const admin = await signUp(t, other, 'AnAdmin')
  await signUp(t, new Client(platform.url), 'NoRoles')
  t.equal((await users('grant', 'AnAdmin', 'admin')).code, 0)
  const listed = await users('list')
  t.equal(listed.code, 0)
  t.match(listed.stdout, new RegExp(`^AnAdmin\\t${admin.id}\\tadmin$`, 'm'))
  t.match(listed.stdout, /^DevPerson\t\S+\tadmin$/m)
  t.notMatch(listed.stdout, /NoRoles/)
})

t.test('users: an unknown user or role exits 1 with one clear line; bad usage exits 64', async (t) => {
  const nobody = await users('grant', 'nobody-here', 'developer')
  t.same(nobody, { code: 1, stdout: '', stderr: 'users: no user "nobody-here"\n' })
  const newline = await users('grant', 'a\nb', 'developer')
  t.equal(newline.code, 1)
  t.equal(newline.stderr.split('\n').length, 2, 'a name with a newline: still one line')
  t.match(newline.stderr, /^users: no user "a(\\n|\\u000a)b"\n$/)
  // A DATA_DIR with no database (a typo, or ./data from the wrong directory): said so, and nothing
  // is made there, for a change or a list (a first-time user's `users list` from /tmp made /tmp/data).
  const parent = tempDir()
  const stray = path.join(parent, 'mistyped')
  const noDatabase = { code: 1, stdout: '', stderr: `users: no database in DATA_DIR ${JSON.stringify(stray)}: is it the platform's? (its default, ./data, is read from the current directory)\n` }
  t.same(await usersIn(stray, 'grant', 'DevPerson', 'developer'), noDatabase, 'grant')
  t.same(await usersIn(stray, 'list'), noDatabase, 'list')
  t.same(readdirSync(parent), [], 'no DATA_DIR made')
  mkdirSync(stray)
  t.same(await usersIn(stray, 'revoke', 'DevPerson', 'developer'), noDatabase, 'revoke, in a DATA_DIR that exists')
  t.same(readdirSync(stray), [], 'no database or secret made in it')
  const role = await users('grant', 'DevPerson', 'root')
  t.same(role, { code: 1, stdout: '', stderr: 'users: unknown role "root"; roles are admin, developer\n' })
  for (const args of [[], ['grant'], ['grant', 'DevPerson'], ['frobnicate'], ['list', 'extra'], ['grant', 'a', 'developer', 'x']]) {
    const result = await users(...args)
    t.equal(result.code, 64, `users ${args.join(' ')}`)
    t.match(result.stderr, /^usage: /)
  }
})

t.test('users on a file that is not a database: the server\'s config line and exit 2, no stack trace', async (t) => {
  const dir = tempDir()
  writeFileSync(path.join(dir, 'playfield.sqlite'), 'this is not a database, just text long enough to have a header of sorts\n'.repeat(20))
  const result = await usersIn(dir, 'list')
  t.same(result, {
    code: 2,
    stdout: '',
    stderr: `config: DATA_DIR: the database "${dir}/playfield.sqlite" cannot be used (SQLITE_NOTADB: file is not a database); expected a DATA_DIR whose playfield.sqlite is a SQLite database this user can read and write\n`,
  })
})

t.test('commands started together on a database not yet migrated all open it: the migrations run once', async (t) => {
  for (let round = 0; round < 2; round++) {
    const dir = tempDir()
    // An empty file is an empty SQLite database (users refuses a DATA_DIR with none at all).
    writeFileSync(path.join(dir, 'playfield.sqlite'), '')
    const results = await Promise.all(Array.from({ length: 4 }, () => usersIn(dir, 'list')))
    t.same(results.map((r) => [r.code, r.stderr]), Array(4).fill([0, '']), `round ${round + 1}`)
  }
})
