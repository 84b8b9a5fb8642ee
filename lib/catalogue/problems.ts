import { Settings, type TSchema, type Validator } from '../typebox.js'
import { escapeControls } from '../log.js'
import { PATTERN_TEXT } from './manifest.js'

/** One catalogue problem; printed as `<file>: <JSON path>: <what is wrong>` (CONTRACT §5). */
export interface Problem {
  file: string
  path: string
  message: string
}

/** The problem as its one printed line: control characters in it are escaped, so it stays one line. */
export function formatProblem(p: Problem): string {
  return escapeControls(`${p.file}: ${p.path}: ${p.message}`)
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/

/** Append a key or index to a JSONPath: `$.a.b`, `$.ids[0]`, `$.configs["lap-time"]`. */
export function jsonPath(base: string, key: string | number): string {
  if (typeof key === 'number') return `${base}[${key}]`
  return IDENTIFIER.test(key) ? `${base}.${key}` : `${base}[${JSON.stringify(key)}]`
}

/**
 * A JSON Pointer (TypeBox's instancePath) into `value` as a JSONPath under `base`. A pointer does not
 * say whether `2026` is an index or a key (a leaderboard id may be digits): the value it walks does.
 */
function fromPointer(base: string, pointer: string, value: unknown): string {
  if (pointer === '') return base
  let path = base
  let at = value
  for (const key of pointer.slice(1).split('/').map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))) {
    path = jsonPath(path, Array.isArray(at) ? Number(key) : key)
    at = typeof at === 'object' && at !== null ? (at as Record<string, unknown>)[key] : undefined
  }
  return path
}

const ARTICLE: Record<string, string> = {
  string: 'a string', number: 'a number', integer: 'an integer', boolean: 'a boolean',
  object: 'an object', array: 'an array', null: 'null',
}

/**
 * Every error of `value`, past TypeBox's cap on them: a manifest's author wants every problem in one
 * run (CONTRACT §5: one line per problem), and a file on the server is no untrusted body. The cap
 * (lib/catalogue/manifest.ts) stays for the request bodies every other check reads.
 */
function everyError(validator: Validator<{}, TSchema>, value: unknown): ReturnType<Validator<{}, TSchema>['Errors']> {
  const cap = Settings.Get().maxErrors
  Settings.Set({ maxErrors: Number.MAX_SAFE_INTEGER })
  try {
    return validator.Errors(value)
  } finally {
    Settings.Set({ maxErrors: cap })
  }
}

/** Check `value` against a compiled schema; one problem per failing value, worded for a person. */
export function schemaProblems(validator: Validator<{}, TSchema>, value: unknown, file: string, base = '$'): Problem[] {
  if (validator.Check(value)) return []
  const problems: Problem[] = []
  for (const e of everyError(validator, value)) {
    const params = e.params as Record<string, unknown>
    const path = fromPointer(base, e.instancePath, value)
    switch (e.keyword) {
      case 'required':
        for (const name of params.requiredProperties as string[]) {
          problems.push({ file, path: jsonPath(path, name), message: 'is required' })
        }
        continue
      // additionalProperties: false reports each extra key as keyword 'boolean' at its own path.
      case 'boolean':
        problems.push({ file, path, message: 'is not a known field' })
        continue
      case 'additionalProperties':
        continue
      case 'type':
        problems.push({ file, path, message: `must be ${ARTICLE[String(params.type)] ?? String(params.type)}` })
        continue
      case 'enum':
        problems.push({ file, path, message: `must be one of ${(params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}` })
        continue
      case 'pattern':
        problems.push({ file, path, message: `must be ${PATTERN_TEXT.get(String(params.pattern)) ?? `like /${String(params.pattern)}/`}` })
        continue
      case 'minLength':
        problems.push({ file, path, message: params.limit === 1 ? 'must not be empty' : e.message })
        continue
      case 'minItems':
        problems.push({ file, path, message: params.limit === 1 ? 'must not be an empty array' : e.message })
        continue
      default:
        problems.push({ file, path, message: e.message })
    }
  }
  return problems
}
