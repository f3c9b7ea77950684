import { hasControlCharacter } from "../text.js"
import { mixedScriptProblem } from "./scripts.js"

/**
 * Names of permission groups (docs/access-policy.md, "Group names"). A name is what an administrator
 * reads in listings, effective access and audit events, so two groups must never read alike:
 *
 * - refused outright: control characters, and characters that are invisible or change the direction
 *   of the text around them — Unicode format characters (Cf: zero-width spaces and joiners, bidi
 *   embeddings, overrides and isolates, the BOM, soft hyphen), other default-ignorable code points
 *   (variation selectors, Hangul fillers), line and paragraph separators, lone surrogates —,
 *   whitespace at either end (docs/decisions.md: refused, not trimmed), and a word mixing scripts
 *   (`Αdministrators` with a Greek Alpha; src/policy/scripts.ts);
 * - compared by a key: NFC-normalized, runs of whitespace as one space, trimmed, case-folded. Two
 *   permission groups may not share a key (`name_taken`); the store keeps it in `groups.name_key`
 *   under a unique index (migration 0015).
 */

export const MAX_GROUP_NAME = 200

// \p{Default_Ignorable_Code_Point} covers the invisible ones outside Cf (U+034F, U+115F, U+3164,
// U+FE00-FE0F, U+E0100-E01EF…); Cf the zero-width and bidi controls (U+200B-U+200F, U+202A-U+202E,
// U+2066-U+2069, U+061C, U+FEFF, U+00AD).
const invisible = /[\p{Cf}\p{Default_Ignorable_Code_Point}\p{Zl}\p{Zp}\p{Cs}]/u
const invisibleAll = /[\p{Cf}\p{Default_Ignorable_Code_Point}\p{Zl}\p{Zp}\p{Cs}]/gu

/** What is wrong with `name` as a group name, or undefined when it may be written. */
export const groupNameProblem = (name: string): string | undefined => {
  if (name.length === 0) return "must not be empty"
  if (name.length > MAX_GROUP_NAME) return `must be at most ${MAX_GROUP_NAME} characters`
  if (hasControlCharacter(name)) return "must not contain control characters"
  const found = invisible.exec(name)
  if (found !== null) {
    const code = found[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")
    return `must not contain invisible or direction-changing characters (U+${code} at index ${found.index})`
  }
  if (name.trim() !== name) return "must not begin or end with whitespace"
  return mixedScriptProblem(name)
}

/**
 * The key two names are compared by: names with equal keys read alike. Invisible characters are
 * dropped first, so a stored name written before they were refused still meets its look-alike.
 * Case folding is full (`ß` and `SS` meet): upper-casing then lower-casing, then NFC again, because
 * case mapping can leave a string unnormalized.
 */
export const groupNameKey = (name: string): string =>
  name
    .normalize("NFC")
    .replace(invisibleAll, "")
    .replace(/\s+/gu, " ")
    .trim()
    .toUpperCase()
    .toLowerCase()
    .normalize("NFC")
