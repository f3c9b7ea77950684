import { Schema } from "effect"

/**
 * A point in time as stored: `TIMESTAMPTZ` on PostgreSQL (read back as a `Date`) and ISO-8601 UTC text on
 * SQLite (which has no time type; fixed-width ISO text compares correctly as a string).
 */
export const StoredTimestamp = Schema.Union(Schema.DateFromSelf, Schema.Date)

/** The value to bind for a timestamp column on either dialect. */
export const toStoredTimestamp = (date: Date): string => date.toISOString()
