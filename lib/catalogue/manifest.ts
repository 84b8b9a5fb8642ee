import { Compile, Settings, Type, type Static, type TSchema, type Validator } from '../typebox.js'

// TypeBox stops at 8 errors by default. Request bodies' checks list up to 10 details, each of several
// errors; a manifest's check lifts the cap altogether (problems.ts).
Settings.Set({ maxErrors: 100 })

const SLUG = '^[a-z0-9][a-z0-9_-]{0,63}$'
const BOARD_ID = '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$'
/** No scheme, not protocol-relative, no spaces: a path on the platform's own origin. */
// No backslash anywhere: URL parsing reads `\` as `/`, so `/\\evil.example/x` would leave the site.
// No control character: URL parsing strips leading ones, so `\u0001//evil.example/` would too.
const PLAIN = '[^\\s\\\\\\x00-\\x1f\\x7f]'
const RELATIVE = `^(?![A-Za-z][A-Za-z0-9+.-]*:)(?!//)${PLAIN}+$`
const ADDRESS = `^(https?://${PLAIN}+|(?![A-Za-z][A-Za-z0-9+.-]*:)(?!//)${PLAIN}+)$`
const UTC_TIME = '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d{1,9})?Z$'
const ISO_TIME = '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d{1,9})?(Z|[+-]\\d{2}:\\d{2})$'
const SEMVER = '^\\d+\\.\\d+\\.\\d+(-[0-9A-Za-z.-]+)?(\\+[0-9A-Za-z.-]+)?$'
const CAPTURE_IMAGE = `^(?=${PLAIN}+$)(?![A-Za-z][A-Za-z0-9+.-]*:)(?!//)[^?]*\\?([^&]*&)*v=[^&]`

/** What a pattern means, for problem lines ("must be <this>"). */
export const PATTERN_TEXT: ReadonlyMap<string, string> = new Map([
  [SLUG, 'a slug: 1-64 of a-z 0-9 _ -, starting with a letter or digit'],
  [BOARD_ID, 'a leaderboard id: 1-128 of A-Z a-z 0-9 _ . : -, starting with a letter or digit'],
  [RELATIVE, 'a relative path (no scheme, no //, no backslashes, spaces or control characters)'],
  [ADDRESS, 'an http(s) URL or a relative path (no backslashes, spaces or control characters)'],
  [UTC_TIME, 'an ISO 8601 UTC timestamp like 2026-01-31T12:00:00Z'],
  [ISO_TIME, 'an ISO 8601 timestamp with Z or an offset'],
  [SEMVER, 'a semantic version like 1.2.3'],
  [CAPTURE_IMAGE, 'a relative path (no backslashes, spaces or control characters) whose query carries v=<timestamp>'],
])

const Text = Type.String({ minLength: 1, maxLength: 4096 })
// Served as written: JSON.parse rounds an integer past 2^53-1 (12345678901234567890 would be served
// as 12345678901234567000), so such a number is refused rather than changed.
const integerFrom = (minimum: number) => Type.Integer({ minimum, maximum: Number.MAX_SAFE_INTEGER })
const Count = integerFrom(0)
const strict = <T extends Record<string, TSchema>>(props: T) => Type.Object(props, { additionalProperties: false })

// Spec 2.1-2.3 give some fields "allowed values" and others "values seen": the first are enums,
// the second open text (a new board type, theme or capture result is not a broken manifest; a
// type CONTRACT §5 does not name resolves to `best`).
const BoardConfig = strict({
  type: Type.Optional(Text),
  operator: Type.Optional(Type.Enum(['incr', 'set', 'best'])),
  sortOrder: Type.Optional(Type.Enum(['desc', 'asc', 'descending', 'ascending'])),
  label: Type.Optional(Text),
  title: Type.Optional(Text),
  unit: Type.Optional(Text),
  description: Type.Optional(Text),
  // Served as written: past 2^53-1 JSON.parse rounds it, as it would a count.
  default: Type.Optional(Type.Number({ minimum: -Number.MAX_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER })),
  authoritative: Type.Optional(Type.Boolean()),
  // string or null; checked as a five-field cron by rules.ts, which words the problem better.
  resetSchedule: Type.Optional(Type.Unknown()),
})

/** Spec 2.3. `{enabled: false}` alone, or `default` + `ids` (+ `configs`); rules.ts checks which. */
const Leaderboards = strict({
  enabled: Type.Optional(Type.Boolean()),
  default: Type.Optional(Type.String({ pattern: BOARD_ID })),
  ids: Type.Optional(Type.Array(Type.String({ pattern: BOARD_ID }), { minItems: 1 })),
  configs: Type.Optional(Type.Record(Type.String(), BoardConfig)),
})

/** Spec 2.2: a play capture. */
const CaptureSchema = strict({
  capturedAt: Type.String({ pattern: ISO_TIME }),
  result: Text,
  playUrl: Type.String({ pattern: ADDRESS }),
  imageUrl: Type.String({ pattern: CAPTURE_IMAGE }),
  metadataUrl: Type.String({ pattern: RELATIVE }),
  source: Type.Enum(['capture-on-demand']),
  viewport: strict({ width: integerFrom(1), height: integerFrom(1) }),
  notes: Type.Array(Type.String()),
})

/** Spec 2.1: a game manifest, one file a game (CONTRACT §5). */
const ManifestSchema = strict({
  id: Type.String({ pattern: SLUG }),
  title: Text,
  description: Text,
  thumbnail: Type.String({ pattern: RELATIVE }),
  rating: strict({ average: Type.Number({ minimum: 0, maximum: 5 }), count: Count }),
  developer: Type.Optional(Text),
  genre: Type.Array(Text),
  playerCount: strict({ current: Count, max: integerFrom(1), min: integerFrom(1) }),
  status: Type.Enum(['available', 'beta']),
  gameType: Type.Enum(['web']),
  integrationType: Type.Enum(['iframe-themeable', 'native-component']),
  engine: Text,
  analytics: Type.Optional(
    strict({
      totalPlays: Count,
      avgSessionMinutes: Type.Number({ minimum: 0 }),
      retentionRate: Type.Number({ minimum: 0, maximum: 1 }),
      popularityScore: Count,
    }),
  ),
  playUrl: Type.String({ pattern: RELATIVE }),
  lastUpdated: Type.String({ pattern: UTC_TIME }),
  screenshots: Type.Array(Type.String({ pattern: RELATIVE })),
  // object or null; checked against CaptureSchema by rules.ts so a bad capture reads as such.
  verifiedPlayCapture: Type.Optional(Type.Unknown()),
  tags: Type.Array(Text),
  version: Type.String({ pattern: SEMVER }),
  theme: Type.Optional(Text),
  entryPoint: Text,
  leaderboards: Type.Optional(Leaderboards),
  capabilities: strict({ aiPractice: Type.Boolean(), spectators: Type.Boolean(), authoritativeChat: Type.Boolean() }),
  matchmaking: strict({ enabled: Type.Boolean(), reason: Type.Optional(Text) }),
  session: strict({
    mode: Type.Enum(['backend-match', 'dedicated-native-lobby']),
    allowSoloAutostart: Type.Boolean(),
    autoOpenDrawer: Type.Boolean(),
  }),
  characters: Type.Optional(Type.Array(strict({ id: Type.String({ pattern: SLUG }) }), { minItems: 1 })),
})

/** A manifest that passed the schema (before the cross-field rules). */
export type Manifest = Static<typeof ManifestSchema>
/** A leaderboard config as written in a manifest. */
export type BoardConfigInput = Static<typeof BoardConfig>

/** Compiled once: manifests are checked at start and on every reload. */
export const ManifestValidator: Validator<{}, typeof ManifestSchema> = Compile(ManifestSchema)
/** Compiled once: for captures in manifests and in SCREENSHOTS_DIR/games/<id>/latest.json. */
export const CaptureValidator: Validator<{}, typeof CaptureSchema> = Compile(CaptureSchema)
