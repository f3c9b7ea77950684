import { codePointLabel as codePoint, hasControlCharacter, INVISIBLE_CLASS } from "../text.js"
import { mixedScriptProblem } from "./scripts.js"

/**
 * Names of permission groups (docs/access-policy.md, "Group names"). A name is what an administrator
 * reads in listings, effective access and audit events, so two groups must never read alike:
 *
 * - refused outright (`visibleNameProblem`, every name people read, display names included): control
 *   characters, and characters that are invisible or change the direction of the text around them —
 *   Unicode format characters (Cf: zero-width spaces and joiners, bidi embeddings, overrides and
 *   isolates, the BOM, soft hyphen), other default-ignorable code points (variation selectors, Hangul
 *   fillers), line and paragraph separators, lone surrogates, blank symbols — save the joiners a writing
 *   system needs; and whitespace at either end (docs/decisions.md: refused, not trimmed);
 * - refused in names that must not pass for another (`groupNameProblem`: group names, user names):
 *   narrow spaces, compatibility letters (`𝖠`), a combining mark left apart from a Latin, Greek or
 *   Cyrillic letter, and a word mixing scripts (`Αdministrators` with a Greek Alpha; src/policy/scripts.ts);
 * - compared by a key: NFC-normalized, runs of whitespace as one space, trimmed, case-folded. Two
 *   permission groups may not share a key (`name_taken`); the store keeps it in `groups.name_key`
 *   under a unique index (migration 0015).
 */

export const MAX_GROUP_NAME = 200

const invisible = new RegExp(`[${INVISIBLE_CLASS}]`, "u")
const invisibleAll = new RegExp(`[${INVISIBLE_CLASS}]`, "gu")

/**
 * Joiners a writing system needs, masked before the check for invisible characters: U+200C and U+200D
 * between letters of a script written with them (Persian `گروه‌ها`, Sinhala `ශ්‍රී`, never Latin, Greek or
 * Cyrillic), and the emoji presentation selector and joiner within an emoji sequence (`☁️`, `👩‍💻`).
 */
const scriptWithJoiners = (char: string) =>
  /[\p{L}\p{M}]/u.test(char) && !/[\p{Script=Latin}\p{Script=Greek}\p{Script=Cyrillic}]/u.test(char)
const pictographic = (char: string) => /\p{Extended_Pictographic}/u.test(char)

/** The character before index `at` (a whole surrogate pair) and the one from `at + 1`. */
const neighbours = (text: string, at: number) => {
  const low = text.charCodeAt(at - 1)
  const start = low >= 0xdc00 && low <= 0xdfff ? at - 2 : at - 1
  const before = start < 0 ? "" : String.fromCodePoint(text.codePointAt(start)!)
  const after = at + 1 < text.length ? String.fromCodePoint(text.codePointAt(at + 1)!) : ""
  return { before, after }
}

/** `name` with each needed joiner replaced by a letter (same length, so indexes hold). */
const maskNeededJoiners = (name: string) =>
  name.replace(/\u200C|\u200D|\uFE0F/g, (joiner, at: number) => {
    const { before, after } = neighbours(name, at)
    const needed =
      joiner === "\uFE0F"
        ? pictographic(before)
        : (scriptWithJoiners(before) && scriptWithJoiners(after)) ||
          (joiner === "\u200D" && (pictographic(before) || before === "\uFE0F") && pictographic(after))
    return needed ? "j" : joiner
  })

/**
 * What is wrong with `name` as text people read — a display name, or the first checks of a group or user
 * name — or undefined: empty, too long, control characters, invisible characters, edge whitespace.
 */
export const visibleNameProblem = (name: string): string | undefined => {
  if (name.length === 0) return "must not be empty"
  if (name.length > MAX_GROUP_NAME) return `must be at most ${MAX_GROUP_NAME} characters`
  if (hasControlCharacter(name)) return "must not contain control characters"
  const found = invisible.exec(maskNeededJoiners(name))
  if (found !== null) {
    const char = String.fromCodePoint(name.codePointAt(found.index)!)
    return `must not contain invisible or direction-changing characters (${codePoint(char)} at index ${found.index})`
  }
  if (name.trim() !== name) return "must not begin or end with whitespace"
  return undefined
}

/**
 * Compatibility characters (NFKC folds them to others): mathematical letters (`𝖺`), fullwidth forms
 * (`ａ`), roman numerals (`Ⅰ`), superscripts and ligatures read as the plain letters, and being of
 * the script Common they pass the mixed-script check. Refused in names that must not read alike, naming
 * what to write instead. Whitespace is left to the key, which reads every run of it as one space.
 */
const compatibilityProblem = (name: string): string | undefined => {
  if (name.normalize("NFKC") === name.normalize("NFC")) return undefined
  let index = 0
  for (const char of name) {
    const folded = char.normalize("NFKC")
    // Letters and letter numbers only: fullwidth punctuation (`研发部（北京）`), `№`, `™` or `CO₂` read
    // as what they are; spaces of other widths are spaces to the key already.
    if (folded !== char.normalize("NFC") && /[\p{L}\p{Nl}]/u.test(char)) {
      return `must not contain compatibility characters (${codePoint(char)} at index ${index}; write ${JSON.stringify(folded)})`
    }
    index += char.length
  }
  return undefined
}

/**
 * What is wrong with `name` as a permission group's or a local account's name, or undefined when it may
 * be written: readable (`visibleNameProblem`), and not able to pass for another — no compatibility
 * characters, no word mixing scripts.
 */
export const groupNameProblem = (name: string): string | undefined =>
  visibleNameProblem(name) ??
  otherSpaceProblem(name) ??
  compatibilityProblem(name) ??
  looseMarkProblem(name) ??
  mixedScriptProblem(name)

/**
 * Spaces narrower than a space (hair, thin, narrow no-break, Ogham, mathematical): they read as nothing
 * inside a word. A space, a no-break space and the ideographic space (`営業部　第一課`) are taken; the key
 * reads each run of them as one space.
 */
const otherSpaceProblem = (name: string): string | undefined => {
  const found = /[^\S \u00A0\u3000]/u.exec(name)
  return found === null ? undefined : `must not contain narrow spaces (${codePoint(found[0])} at index ${found.index})`
}

/**
 * A combining mark left apart from a Latin, Greek or Cyrillic letter once the name is composed (NFC):
 * `i` with U+0307 draws as `i`, and every accented letter these scripts write has a composed form.
 * Other scripts write with combining marks (Devanagari vowel signs), so only these three are checked.
 */
const looseMarkProblem = (name: string): string | undefined => {
  const found = /[\p{Script=Latin}\p{Script=Greek}\p{Script=Cyrillic}](\p{M})/u.exec(name.normalize("NFC"))
  return found === null
    ? undefined
    : `must not contain a combining mark apart from its letter (${codePoint(found[1]!)} after "${found[0].slice(0, -found[1]!.length)}"): write the letter with its accent`
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
    // Once more: U+1E9E (capital sharp s) lower-cases to `ß`, which only the second round makes `ss`.
    .toUpperCase()
    .toLowerCase()
    .normalize("NFC")
