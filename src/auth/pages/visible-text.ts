import { INVISIBLE_CLASS } from "../../text.js"

/**
 * Characters that are invisible or reorder what a reviewer reads: controls, format characters (zero-width
 * spaces and joiners, bidirectional embeddings, overrides and isolates, the BOM, soft hyphen), the other
 * default-ignorable code points (the combining grapheme joiner U+034F, variation selectors U+FE00-FE0F
 * and U+E0100-E01EF, Mongolian selectors, Hangul fillers U+115F, U+1160, U+3164, U+FFA0, U+17B4-17B5),
 * line and paragraph separators, private-use, unassigned and lone surrogate code points, and two symbols
 * drawn as nothing (U+2800 braille pattern blank, U+1D159 musical null notehead): the characters
 * permission group and account names refuse (src/policy/group-name.ts), and a few more — every space
 * but U+0020 (a no-break or hair space reads as a space, or as nothing), U+FFFC (an empty gap), a
 * combining mark with no letter before it (it would sit on the quote mark), and a combining mark on a
 * Latin, Greek or Cyrillic letter or on another mark (`i` + U+0307 draws as `i`; those scripts' accented
 * letters are written composed). Each lookbehind reads one character: a value of a million marks costs
 * a million steps, not their square.
 */
const HIDDEN = new RegExp(
  String.raw`[\p{Cc}${INVISIBLE_CLASS}\p{Zs}\p{Co}\p{Cn}]|(?<![\p{L}\p{M}\p{N}])\p{M}|(?<=[\p{Script=Latin}\p{Script=Greek}\p{Script=Cyrillic}\p{M}])\p{M}`,
  "gu"
)

/**
 * Letters of the right-to-left scripts: a review page shows values character by character in stored
 * order (`pre[dir=ltr]` overrides the bidirectional algorithm, src/auth/pages/html.ts), since right-to-
 * left letters would otherwise move the numbers beside them (`pay א 100 to 200` drawn as `pay 100 א to
 * 200`); a page holding them says so.
 */
// The blocks Unicode reserves for right-to-left scripts (Hebrew to Arabic Extended, their presentation
// forms, and the supplementary planes' right-to-left ranges: Phoenician, Adlam and the rest).
const RIGHT_TO_LEFT = /[\u0590-\u08FF\uFB1D-\uFDFF\uFE70-\uFEFF\u{10800}-\u{10FFF}\u{1E800}-\u{1EFFF}]/u

/**
 * Whether a review page must warn about a value it shows as `shown` (what `visibleText` made of it):
 * escapes in it — those `visibleText` wrote, and those JSON writes itself for controls and lone
 * surrogates — or right-to-left letters.
 */
export const shownNeedsCare = (shown: string): boolean => shown.includes("\\u") || RIGHT_TO_LEFT.test(shown)

/** Whether a review page must warn about `text` as it will show it (`shownNeedsCare`). */
export const needsCareful = (text: string): boolean => shownNeedsCare(visibleText(text))

/** A character as JSON escapes it: `\uXXXX`, a surrogate pair of them above U+FFFF (`\udb40\udd00`). */
const escaped = (char: string) => {
  let out = ""
  for (let index = 0; index < char.length; index++) out += `\\u${char.charCodeAt(index).toString(16).padStart(4, "0")}`
  return out
}

/**
 * `text` with every hidden character written as its JSON escape, so a review page shows exactly what
 * will be used, and a JSON document stays one that parses to the same value (a form saved unchanged
 * stores what it showed). Newlines are the JSON's own layout.
 */
export const visibleText = (text: string) =>
  text.replace(HIDDEN, (char) => (char === "\n" || char === " " ? char : escaped(char)))
