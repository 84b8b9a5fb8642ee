import Type from 'typebox'
import { Compile } from 'typebox/compile'

// CONTRACT §3: 3-24 characters of A-Z a-z 0-9 _ -, starting with a letter or digit. ASCII only,
// so look-alikes (Cyrillic "а", fullwidth "Ａ") and control characters never pass; the pattern
// fixes the length too, and minLength/maxLength make the error message say so.
const Username = Type.String({ minLength: 3, maxLength: 24, pattern: '^[A-Za-z0-9][A-Za-z0-9_-]{2,23}$' })

// CONTRACT §2: 8-256 characters, counted as code points (TypeBox counts them so). Lone UTF-16
// surrogates are refused: they are not characters, and UTF-8 would turn them all into U+FFFD.
const Password = Type.String({ minLength: 8, maxLength: 256, pattern: '^[^\\uD800-\\uDFFF]*$' })

/**
 * `POST /api/auth/register` and `POST /api/auth/login`: `{username, password}`, nothing else.
 * Login holds both to the same rule: a value no account can have is a bad request (400), and
 * only a well-formed wrong pair is a failed sign-in (401, counted by the sign-in limit).
 */
export const CredentialsBody = Compile(Type.Object({ username: Username, password: Password }, { additionalProperties: false }))

/** `PUT /api/user/username`: `{username}`, nothing else. */
export const UsernameBody = Compile(Type.Object({ username: Username }, { additionalProperties: false }))

/** Bodies of the no-body endpoints (guest, logout): when one is sent it must be a JSON object; its keys are ignored. */
export const EmptyBody = Compile(Type.Union([Type.Undefined(), Type.Object({})]))
