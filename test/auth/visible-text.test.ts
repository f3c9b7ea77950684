/**
 * What review pages show of a value (src/auth/pages/visible-text.ts): every character a browser draws as
 * nothing, or that reorders the text around it, as its JSON escape, so a reviewer approves what the
 * backend will receive; and the JSON shown still parses to the same value.
 */
import { describe, expect, it } from "vitest"
import { needsCareful, visibleText } from "../../src/auth/pages/visible-text.js"

const hidden: ReadonlyArray<[string, string, string]> = [
  ["combining grapheme joiner", "\u034f", "\\u034f"],
  ["variation selector 16", "\ufe0f", "\\ufe0f"],
  ["variation selector 17 (above U+FFFF: a surrogate pair of escapes)", "\u{e0100}", "\\udb40\\udd00"],
  ["Mongolian free variation selector", "\u180b", "\\u180b"],
  ["Khmer inherent vowel", "\u17b4", "\\u17b4"],
  ["Hangul choseong filler", "\u115f", "\\u115f"],
  ["Hangul filler", "\u3164", "\\u3164"],
  ["halfwidth Hangul filler", "\uffa0", "\\uffa0"],
  ["tag letter A", "\u{e0041}", "\\udb40\\udc41"],
  ["zero-width space", "\u200b", "\\u200b"],
  ["right-to-left override", "\u202e", "\\u202e"],
  ["soft hyphen", "\u00ad", "\\u00ad"],
  ["line separator", "\u2028", "\\u2028"],
  ["private use", "\ue000", "\\ue000"],
  ["escape", "\u001b", "\\u001b"],
  ["a lone surrogate", "\ud800", "\\ud800"],
  ["braille pattern blank", "\u2800", "\\u2800"],
  ["musical null notehead", "\u{1d159}", "\\ud834\\udd59"],
  ["object replacement character", "\ufffc", "\\ufffc"],
  ["no-break space", "\u00a0", "\\u00a0"],
  ["hair space", "\u200a", "\\u200a"],
  ["narrow no-break space", "\u202f", "\\u202f"],
  ["ideographic space", "\u3000", "\\u3000"],
  ["Ogham space mark", "\u1680", "\\u1680"]
]

describe("visibleText", () => {
  for (const [name, char, shown] of hidden) {
    it(`shows a ${name} as ${shown}`, () => {
      expect(visibleText(`a${char}b`)).toBe(`a${shown}b`)
      // Shown inside a JSON document, the escape reads back as the character itself.
      const json = JSON.stringify({ id: `1${char}` })
      expect(JSON.parse(visibleText(json))).toEqual({ id: `1${char}` })
    })
  }

  it("shows a combining mark with no letter before it (it would sit on the quote mark), or on a Latin, Greek or Cyrillic letter, as its escape", () => {
    expect(visibleText('"\u0301rm"')).toBe('"\\u0301rm"')
    expect(visibleText('" \u20dd"')).toBe('" \\u20dd"')
    // On a Latin, Greek or Cyrillic letter, a mark is shown too (`i` + U+0307 draws as `i`); on a
    // letter of a script written with marks (Devanagari) it is left as it is.
    expect(visibleText("admi\u0307n e\u0301")).toBe("admi\\u0307n e\\u0301")
    expect(visibleText("\u0915\u093f")).toBe("\u0915\u093f")
  })

  it("a page warns when a value holds what it shows escaped, or right-to-left letters (shown in stored order)", () => {
    expect(needsCareful("pay \u05d0 100 to 200")).toBe(true)
    expect(needsCareful("\u0627\u0644\u0639\u0631\u0628\u064a\u0629")).toBe(true)
    expect(needsCareful("a\u00a0b")).toBe(true)
    expect(needsCareful("plain text, \u65e5\u672c\u8a9e, \u0420\u0443\u0441")).toBe(false)
    expect(needsCareful("pay \u{10900} 100")).toBe(true)
  })

  it("shows stacked marks as escapes, in time linear in their number", () => {
    expect(visibleText("e\u0301\u0323")).toBe("e\\u0301\\u0323")
    const many = `a${"\u0301".repeat(200_000)}`
    const shown = visibleText(many)
    expect(shown.length).toBe(1 + 6 * 200_000)
  })

  it("leaves what is visible as it is: letters of any script, accents, emoji, spaces and the JSON's newlines", () => {
    const text = 'Ünïcödé Ελληνικά Кириллица 日本語 \u00e9 😀 a b\n  "x"'
    expect(visibleText(text)).toBe(text)
  })
})
