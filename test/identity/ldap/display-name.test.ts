/**
 * docs/enterprise-sign-in.md, "LDAP": the name a directory gives a person or group is shown in pages,
 * listings and logs, so a control character in it is shown as a space (and U+0000, which PostgreSQL
 * cannot store, never reaches the store).
 */
import { describe, expect, it } from "vitest"
import { displayNameOf } from "../../../src/identity/ldap/stable-id.js"

describe("a directory entry's display name", () => {
  it("is its first value, trimmed, with control characters shown as spaces; empty means none", () => {
    expect(displayNameOf(["  Alice Example  ", "second"])).toBe("Alice Example")
    expect(displayNameOf([Buffer.from("Bob\u0000\r\nAdmin: yes")])).toBe("Bob   Admin: yes")
    expect(displayNameOf(["\u0007\u0000 "])).toBeUndefined()
    expect(displayNameOf([])).toBeUndefined()
  })
})
