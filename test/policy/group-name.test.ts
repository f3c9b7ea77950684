/**
 * docs/access-policy.md, "Group names": which names may be written, and the key names are compared by.
 */
import { describe, expect, it } from "vitest"
import { groupNameKey, groupNameProblem } from "../../src/policy/group-name.js"

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

  it("keys names by NFC, full case folding, one space per whitespace run, trimmed, invisible characters dropped", () => {
    const key = groupNameKey("Admins2")
    for (const alike of ["admins2", "ADMINS2", " Admins2 ", "Admins\u200b2", "\u202aAdmins2\u202c"]) {
      expect(groupNameKey(alike), JSON.stringify(alike)).toBe(key)
    }
    expect(groupNameKey("Cafe\u0301  Team")).toBe(groupNameKey("CAFÉ\u00a0team"))
    expect(groupNameKey("Straße")).toBe(groupNameKey("STRASSE"))
    expect(groupNameKey("Admins 2")).not.toBe(key)
    expect(groupNameKey("Admins3")).not.toBe(key)
  })
})
