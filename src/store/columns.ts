import { Schema } from "effect"

/** A boolean as stored: INTEGER 0 or 1 on both dialects (one column type, one code path). */
export const StoredBoolean = Schema.transform(Schema.Literal(0, 1), Schema.Boolean, {
  strict: true,
  decode: (stored) => stored === 1,
  encode: (value) => (value ? 1 : 0)
})

/** The value to bind for a boolean column. */
export const toStoredBoolean = (value: boolean): 0 | 1 => (value ? 1 : 0)

/** Revisions are integers in the store and decimal strings on the wire (`If-Match`). */
export const StoredRevision = Schema.Int.pipe(Schema.positive())
