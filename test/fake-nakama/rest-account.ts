import { stringField } from './json.js'

// PUT /v2/account's request (UpdateAccountRequest, nakama-api.md §1.5) and the users columns it writes.

/** UpdateAccountRequest's optional string fields: lowerCamelCase (the runtime's names) to proto names. */
export const ACCOUNT_FIELDS = { username: 'username', displayName: 'display_name', avatarUrl: 'avatar_url', langTag: 'lang_tag', location: 'location', timezone: 'timezone' } as const
export type AccountUpdate = Partial<Record<keyof typeof ACCOUNT_FIELDS, string>>

/** A column's width (VARCHAR(n), counted in characters) for each UpdateAccountRequest field. */
const ACCOUNT_WIDTHS: Record<keyof typeof ACCOUNT_FIELDS, number> = { username: 128, displayName: 255, avatarUrl: 512, langTag: 18, location: 255, timezone: 255 }

/**
 * UpdateAccountRequest from JSON, as protojson reads it: either name style, a wrapper takes a
 * string or null (unset), another value is 400, unknown fields are dropped.
 */
export function accountUpdate(body: Record<string, unknown>): AccountUpdate {
  const out: AccountUpdate = {}
  for (const [camel, proto] of Object.entries(ACCOUNT_FIELDS) as Array<[keyof typeof ACCOUNT_FIELDS, string]>) {
    const value = stringField(body, proto, camel)
    if (value !== undefined) out[camel] = value
  }
  return out
}

/** Whether every value fits its column, VARCHAR(n) counting characters (migrate/sql initial schema). */
export function fitsColumns(update: AccountUpdate): boolean {
  return (Object.entries(update) as Array<[keyof AccountUpdate, string]>).every(([field, value]) => [...value].length <= ACCOUNT_WIDTHS[field])
}
