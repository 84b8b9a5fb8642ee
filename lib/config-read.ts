import { Compile, Type, type TSchema, type Validator } from './typebox.js'
import { ConfigError } from './config-error.js'

/** The environment as config reads it. */
export type Env = Record<string, string | undefined>

/** A variable's check and the form a problem line asks for. */
export interface Variable {
  schema: Validator<{}, TSchema>
  expected: string
}

/** Compile a variable's schema once, beside the words that describe it. */
export function variable(schema: TSchema, expected: string): Variable {
  return { schema: Compile(schema), expected }
}

const PORT = variable(Type.String({ pattern: '^(0|[1-9][0-9]{0,4})$' }), 'an integer from 0 to 65535')

/** A pattern for a comma list of `entry`, spaces allowed around the commas and at the ends (list() trims them). */
export const commaList = (entry: string): string => `^\\s*${entry}(\\s*,\\s*${entry})*\\s*$`

/** The value as a problem line may show it: secrets and keys (a URL's password too) are never echoed into logs. */
function shown(name: string, raw: string): string {
  if (name === 'NAKAMA_URL' && raw.includes('@')) return '(a URL with a user name or password, not shown)'
  return /SECRET|KEY/.test(name) ? `(${raw.length} characters, not shown)` : JSON.stringify(raw.slice(0, 80))
}

/** Read `name` from `env`, check it, and return it or the fallback. */
export function read(env: Env, name: string, spec: Variable, fallback: string): string
export function read(env: Env, name: string, spec: Variable, fallback?: undefined): string | undefined
export function read(env: Env, name: string, spec: Variable, fallback?: string): string | undefined {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  const ok: boolean = spec.schema.Check(raw)
  if (!ok) throw new ConfigError(`${name}: ${shown(name, raw)} is invalid; expected ${spec.expected}`)
  return raw
}

/** The entries of a comma list, trimmed, empty ones dropped. */
export function list(value: string): string[] {
  return value.split(',').map((s) => s.trim()).filter((s) => s !== '')
}

/** A port variable as a number, 0-65535. */
export function port(env: Env, name: string, fallback: string): number {
  const value = Number(read(env, name, PORT, fallback))
  if (value > 65535) throw new ConfigError(`${name}: "${value}" is invalid; expected ${PORT.expected}`)
  return value
}
