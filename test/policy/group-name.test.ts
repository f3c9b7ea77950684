/**
 * docs/access-policy.md, "Group names": which names may be written, and the key names are compared by.
 */
import { describe, expect, it } from "vitest"
import { groupNameKey, groupNameProblem, visibleNameProblem } from "../../src/policy/group-name.js"

describe("permission group names", () => {
  it("refuses control, invisible and direction-changing characters, naming the code point, and edge whitespace", () => {
    expect(groupNameProblem("CRM readers")).toBeUndefined()
    expect(groupNameProblem("Équipe Nord — 北")).toBeUndefined()
    expect(groupNameProblem("")).toBe("must not be empty")
    expect(groupNameProblem("x".repeat(201))).toBe("must be at most 200 characters")
    expect(groupNameProblem("a\tb")).toBe("must not contain control characters")
    for (const [name, code] of [
      ["a\u200bb", "U+200B"],
      ["a\u200cb", "U+200C"],
      ["a\u200eb", "U+200E"],
      ["a\u061cb", "U+061C"],
      ["x\u202eevil", "U+202E"],
      ["a\u2067b", "U+2067"],
      ["a\u2060b", "U+2060"],
      ["a\ufe0fb", "U+FE0F"],
      ["a\u034fb", "U+034F"],
      ["a\u{e0041}b", "U+E0041"],
      ["a\u2029b", "U+2029"],
      ["a\ud800b", "U+D800"]
    ] as const) {
      expect(groupNameProblem(name), name).toMatch(
        new RegExp(
          `^must not contain invisible or direction-changing characters \\(${code.replace("+", "\\+")} at index 1\\)$`
        )
      )
    }
    for (const name of [" a", "a ", "a\u00a0", "\u2003a"]) {
      expect(groupNameProblem(name), JSON.stringify(name)).toBe("must not begin or end with whitespace")
    }
  })

  it("refuses a word mixing scripts (a Greek Alpha, a Cyrillic e in a Latin word), naming both and the code point; allows each word its own script", () => {
    expect(groupNameProblem("\u0391dministrators")).toBe(
      "must not mix scripts within a word (Greek and Latin letters: U+0064 at index 1): it would read like another name"
    )
    expect(groupNameProblem("probe us\u0435rs")).toBe(
      "must not mix scripts within a word (Latin and Cyrillic letters: U+0435 at index 8): it would read like another name"
    )
    expect(groupNameProblem("\u0430dmin")).toMatch(/^must not mix scripts within a word \(Cyrillic and Latin letters/)
    for (const name of [
      "CRM \u0427\u0438\u0442\u0430\u0442\u0435\u043b\u0438",
      "\u0395\u03bb\u03bb\u03b7\u03bd\u03b9\u03ba\u03ac",
      "\u65e5\u672c\u8a9e\u30c6\u30ad\u30b9\u30c8 team",
      "\u6771\u4eac\u30bf\u30ef\u30fc",
      "\ud55c\uad6d\uc5b4abc",
      "Cafe\u0301 2-north_x.y",
      "\u0e44\u0e17\u0e22"
    ]) {
      expect(groupNameProblem(name), name).toBeUndefined()
    }
  })

  it("refuses compatibility characters that read as plain letters (mathematical, fullwidth, roman numerals, superscripts), naming what to write; and blank symbols", () => {
    for (const [name, code, plain] of [
      ["\u{1d5ba}dmin", "U+1D5BA", "a"],
      ["\u{1d5a0}dministrators", "U+1D5A0", "A"],
      ["\u2160nfra", "U+2160", "I"],
      ["\uff41dmin", "U+FF41", "a"],
      ["\u1d43dmin", "U+1D43", "a"]
    ] as const) {
      expect(groupNameProblem(name), name).toBe(
        `must not contain compatibility characters (${code} at index ${name.indexOf([...name].find((c) => c.normalize("NFKC") !== c)!)}; write "${plain}")`
      )
    }
    for (const [name, code] of [
      ["Administrators \u2800", "U+2800"],
      ["admin\u{1d159}", "U+1D159"]
    ] as const) {
      expect(groupNameProblem(name), name).toContain(
        `must not contain invisible or direction-changing characters (${code}`
      )
    }
    // Display names are not unique: readable is enough.
    expect(visibleNameProblem("\u{1d5ba}da \u03b2-testers")).toBeUndefined()
    expect(visibleNameProblem("Ada\u2800")).toContain("U+2800")
  })

  it("takes what writing systems need: joiners in Persian and Sinhala, emoji sequences, wide spaces, fullwidth punctuation, words joined by punctuation in two scripts", () => {
    for (const name of [
      "\u06af\u0631\u0648\u0647\u200c\u0647\u0627",
      "\u0dc1\u0dca\u200d\u0dbb\u0dd3",
      "\u2601\ufe0f Platform",
      "\u{1f469}\u200d\u{1f4bb} Developers",
      "\u55b6\u696d\u90e8\u3000\u7b2c\u4e00\u8ab2",
      "\u7814\u53d1\u90e8\uff08\u5317\u4eac\uff09",
      "IT-\u043e\u0442\u0434\u0435\u043b",
      "\u03b2-testers",
      "CO\u2082 Team",
      "Acme\u2122 Support"
    ]) {
      expect(groupNameProblem(name), name).toBeUndefined()
    }
    // The same joiners elsewhere are invisible characters; Lisu and Cherokee in one word are two scripts.
    expect(groupNameProblem("Admin\u200dx")).toContain("U+200D at index 5")
    expect(groupNameProblem("a\ufe0fb")).toContain("U+FE0F at index 1")
    expect(groupNameProblem("\ua4ee\u13a0\ua4df\ua4f2\ua4e0")).toContain(
      "must not mix scripts within a word (Lisu and Cherokee"
    )
  })

  it("keys names by NFC, full case folding, one space per whitespace run, trimmed, invisible characters dropped", () => {
    const key = groupNameKey("Admins2")
    for (const alike of ["admins2", "ADMINS2", " Admins2 ", "Admins\u200b2", "\u202aAdmins2\u202c"]) {
      expect(groupNameKey(alike), JSON.stringify(alike)).toBe(key)
    }
    expect(groupNameKey("Cafe\u0301  Team")).toBe(groupNameKey("CAFÉ\u00a0team"))
    expect(groupNameKey("Straße")).toBe(groupNameKey("STRASSE"))
    expect(groupNameKey("STRA\u1e9eE")).toBe(groupNameKey("Straße"))
    expect(groupNameKey("Admins 2")).not.toBe(key)
    expect(groupNameKey("Admins3")).not.toBe(key)
  })
})
