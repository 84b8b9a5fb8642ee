import { Compile, Type, type Static } from '../typebox.js'

/** Terminal sizes are integers 1-1000 (CONTRACT §6). */
const Size = Type.Integer({ minimum: 1, maximum: 1000 })

// Fields a frame does not have are bad fields (CONTRACT §6), as unknown keys are in the platform's
// bodies: `{"type":"create","colums":120}` would otherwise start an 80x24 shell without a word.
const CLOSED = { additionalProperties: false }
const Create = Type.Object({ type: Type.Literal('create'), cols: Type.Optional(Size), rows: Type.Optional(Size) }, CLOSED)
const Input = Type.Object({ type: Type.Literal('input'), data: Type.String() }, CLOSED)
const Resize = Type.Object({ type: Type.Literal('resize'), cols: Size, rows: Size }, CLOSED)
const Kill = Type.Object({ type: Type.Literal('kill') }, CLOSED)
/** CONTRACT §6's extra frame: output characters the page has rendered since its previous ack. */
const Ack = Type.Object({ type: Type.Literal('ack'), bytes: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }) }, CLOSED)

const SCHEMAS = {
  create: Compile(Create),
  input: Compile(Input),
  resize: Compile(Resize),
  kill: Compile(Kill),
  ack: Compile(Ack),
}

/** A checked client frame. */
export type ClientFrame = Static<typeof Create> | Static<typeof Input> | Static<typeof Resize> | Static<typeof Kill> | Static<typeof Ack>

/** A frame from the bridge to the client (spec terminal-bridge §2). */
export type ServerFrame =
  | { type: 'created'; pid: number }
  | { type: 'output'; data: string }
  | { type: 'exit'; code: number; signal: number | null }
  | { type: 'error'; message: string }

/** Parse one text frame: the frame, or the message of the `error` frame to answer with. */
export function parseFrame(text: string): { frame: ClientFrame } | { error: string } {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return { error: 'frame is not JSON' }
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { error: 'frame is not a JSON object' }
  const type = (value as { type?: unknown }).type
  if (typeof type !== 'string') return { error: 'frame has no string "type"' }
  if (!Object.hasOwn(SCHEMAS, type)) return { error: `unknown frame type ${JSON.stringify(type.slice(0, 40))}` }
  const schema = SCHEMAS[type as keyof typeof SCHEMAS]
  if (!schema.Check(value)) {
    const first = [...schema.Errors(value)][0]
    // A missing field is reported on the frame ("must have required properties data"): named
    // here, as the catalogue's problems name it.
    const missing = first?.keyword === 'required' ? (first.params as { requiredProperties: string[] }).requiredProperties[0] : undefined
    const where = missing ?? (first?.instancePath ? first.instancePath.slice(1) : type)
    // TypeBox reports a field the frame does not have as keyword `boolean` ("schema is false").
    const problem = missing ? 'is required' : first?.keyword === 'boolean' ? 'is not a field of this frame' : first?.message ?? 'is invalid'
    // A field name is the client's own text: cut short, as an unknown type is.
    return { error: `invalid ${type} frame: ${where.slice(0, 40)} ${problem}` }
  }
  return { frame: value as ClientFrame }
}
