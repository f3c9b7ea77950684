import { hasControlCharacter } from "../../text.js"

/**
 * Reading ids and names out of search entries. An entry's attributes come back as ldapts gives them:
 * text when the bytes are valid UTF-8, a Buffer otherwise, an array when there are several values.
 */

/** Attributes that hold binary GUIDs or SIDs: always read as bytes, even when the bytes happen to be valid UTF-8. */
const BINARY_ID_ATTRIBUTES = new Set(["objectguid", "objectsid", "msds-consistencyguid", "ms-ds-consistencyguid"])
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const CONTROL = /\p{Cc}/u

const baseName = (attribute: string) => (attribute.split(";")[0] ?? "").toLowerCase()

/**
 * The values of `attribute` in `entry`. Servers answer with their own spelling of the name (`entryUUID`
 * for `entryuuid`), and attribute names are case-insensitive, so the match is too.
 */
export const valuesOf = (entry: Readonly<Record<string, unknown>>, attribute: string): ReadonlyArray<unknown> => {
  const key =
    attribute in entry
      ? attribute
      : Object.keys(entry).find((each) => each !== "dn" && baseName(each) === baseName(attribute))
  const value = key === undefined ? undefined : entry[key]
  if (value === undefined) return []
  return Array.isArray(value) ? value : [value]
}

/**
 * A stable id as the gateway keeps it, or undefined when the entry has none it can trust (absent,
 * empty, or several values). Binary values (objectGUID) become lowercase hex of their bytes; textual
 * UUIDs (entryUUID) lowercase; other text stays as it is. The same value always gives the same id.
 */
export const stableIdOf = (attribute: string, values: ReadonlyArray<unknown>): string | undefined => {
  if (values.length !== 1) return undefined
  const [value] = values
  if (Buffer.isBuffer(value)) return value.length === 0 ? undefined : value.toString("hex")
  if (typeof value !== "string" || value === "") return undefined
  if (BINARY_ID_ATTRIBUTES.has(baseName(attribute)) || CONTROL.test(value)) {
    return Buffer.from(value, "utf8").toString("hex")
  }
  return UUID.test(value) ? value.toLowerCase() : value
}

/** Display names are cut to this many characters. */
export const MAX_NAME_LENGTH = 256

/** The first value as display text, trimmed and bounded; undefined when there is none. */
export const displayNameOf = (values: ReadonlyArray<unknown>): string | undefined => {
  const [value] = values
  const text = Buffer.isBuffer(value) ? value.toString("utf8") : typeof value === "string" ? value : ""
  // A control character is shown as a space: a name is shown in pages and logs (and U+0000 cannot be stored).
  const trimmed = [...text]
    .map((character) => (hasControlCharacter(character) ? " " : character))
    .join("")
    .trim()
  return trimmed === "" ? undefined : [...trimmed].slice(0, MAX_NAME_LENGTH).join("")
}
