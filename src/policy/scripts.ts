import { codePointLabel } from "../text.js"

/**
 * Mixed scripts in a word (UTS #39 §5.2, "Highly Restrictive"): `Αdministrators` with a Greek Alpha, or
 * `usеrs` with a Cyrillic `е`, reads exactly like the Latin word. A word of a name is written in one
 * script — or in Latin with Han and the Japanese kana, with Han and Bopomofo, or with Han and Hangul, as
 * people write — beside digits, punctuation and marks common to all. Words are checked one by one, so
 * `CRM Читатели` (a Latin word, then a Cyrillic one) is a name a bilingual team may choose.
 *
 * A word wholly in another script that happens to look Latin (`СОРЕ`, all Cyrillic, beside `COPE`) is
 * not caught: that needs UTS #39's confusable skeletons and their table (docs/decisions.md).
 */

// Scripts told apart; a letter of any other script counts as one more ("other"). Script_Extensions, so
// a character shared by several (the kana prolonged sound mark, some combining marks) fits each.
const named = [
  "Latin",
  "Greek",
  "Cyrillic",
  "Armenian",
  "Georgian",
  "Hebrew",
  "Arabic",
  "Devanagari",
  "Bengali",
  "Thai",
  "Han",
  "Hiragana",
  "Katakana",
  "Bopomofo",
  "Hangul",
  "Gujarati",
  "Gurmukhi",
  "Tamil",
  "Telugu",
  "Kannada",
  "Malayalam",
  "Ethiopic",
  "Cherokee",
  "Lisu",
  "Canadian_Aboriginal",
  "Tifinagh",
  "Coptic",
  "Vai"
] as const
type Script = (typeof named)[number] | "other"

const tests = named.map((script) => [script, new RegExp(`\\p{scx=${script}}`, "u")] as const)
const common = /[\p{scx=Common}\p{scx=Inherited}]/u

const bit = (script: Script) => (script === "other" ? 1 << named.length : 1 << named.indexOf(script))
const maskOf = (scripts: ReadonlyArray<Script>) => scripts.reduce((mask, script) => mask | bit(script), 0)

// A word may also use one of these sets as a whole (UTS #39 §5.2).
const together = [
  maskOf(["Latin", "Han", "Hiragana", "Katakana"]),
  maskOf(["Latin", "Han", "Bopomofo"]),
  maskOf(["Latin", "Han", "Hangul"])
]

const scriptsOf = (char: string): number => {
  let mask = 0
  for (const [script, test] of tests) if (test.test(char)) mask |= bit(script)
  return mask === 0 ? bit("other") : mask
}

const nameOf = (mask: number): string => {
  const found = named.find((script) => (mask & bit(script)) !== 0)
  return found ?? "another script"
}

/** What mixes scripts in `text`, or undefined when each word keeps to one (or to an allowed set). */
export const mixedScriptProblem = (text: string): string | undefined => {
  let index = 0
  // Words end at whitespace and punctuation (`IT-отдел`, `DevOps/Девопс`): a look-alike made of whole
  // runs in another script is the whole-script case this check does not claim to catch.
  for (const word of text.split(/([\s\p{P}]+)/u)) {
    let shared = -1
    let first: { readonly mask: number; readonly char: string } | undefined
    const masks: Array<number> = []
    for (const char of word) {
      if (!isCommon(char)) {
        const mask = scriptsOf(char)
        masks.push(mask)
        first ??= { mask, char }
        shared &= mask
        const fits = shared !== 0 || together.some((set) => masks.every((each) => (each & set) !== 0))
        if (!fits) {
          return (
            `must not mix scripts within a word (${nameOf(first.mask)} and ${nameOf(mask)} letters: ` +
            `${codePointLabel(char)} at index ${index}): it would read like another name`
          )
        }
      }
      index += char.length
    }
  }
  return undefined
}

const isCommon = (char: string) => common.test(char)
