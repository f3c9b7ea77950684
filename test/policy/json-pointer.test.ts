/**
 * docs/access-policy.md, "The permission object": `resource_rules[].argument` is a JSON Pointer (RFC 6901):
 * escapes, arrays, absent paths and values that are not strings — every case where a rule must deny.
 */
import { describe, expect, it } from "vitest"
import { ruleHolds } from "../../src/policy/checks/resource-rules.js"
import { compileRules } from "../../src/policy/grant.js"
import { parsePointer, resolvePointer } from "../../src/policy/json-pointer.js"

const args = {
  account: { id: "acc-1", region: "emea", tags: ["a", "b"] },
  "a/b": "slash",
  "m~n": "tilde",
  "~1": "literal tilde-one",
  "": "empty key",
  items: [{ name: "first" }, { name: "second" }],
  count: 3,
  flag: true,
  nothing: null,
  blank: ""
}

describe("JSON Pointer (RFC 6901)", () => {
  it.each([
    ["", args],
    ["/account/id", "acc-1"],
    ["/a~1b", "slash"],
    ["/m~0n", "tilde"],
    ["/~01", "literal tilde-one"],
    ["/", "empty key"],
    ["/items/0/name", "first"],
    ["/items/1/name", "second"],
    ["/account/tags/1", "b"]
  ])("%j resolves", (pointer, expected) => {
    expect(resolvePointer(args, parsePointer(pointer)!)).toEqual(expected)
  })

  it.each([
    ["/missing"],
    ["/account/missing"],
    ["/items/2/name"],
    ["/items/01/name"],
    ["/items/-"],
    ["/items/name"],
    ["/account/id/deeper"],
    ["/__proto__"],
    ["/constructor"],
    ["/account/toString"]
  ])("%j does not resolve", (pointer) => {
    expect(resolvePointer(args, parsePointer(pointer)!)).toBeUndefined()
  })

  it.each([["account/id"], ["/a~2b"], ["/bad~"], ["x"]])("%j is not a pointer", (pointer) => {
    expect(parsePointer(pointer)).toBeUndefined()
  })
})

describe("a resource rule", () => {
  const rule = (argument: string, allowed: ReadonlyArray<string>) =>
    compileRules({
      endpoint_id: "crm",
      tools: [],
      allow_write_requests: false,
      resource_rules: [{ argument, allowed_values: allowed }],
      prompts: [],
      read_resources: false,
      subscribe: false
    })[0]!

  it.each([
    ["an allowed string", "/account/region", ["emea"], true],
    ["a string not allowed", "/account/region", ["apac"], false],
    ["a missing argument", "/account/owner", ["emea"], false],
    ["an empty string", "/blank", [""], false],
    ["a number", "/count", ["3"], false],
    ["a boolean", "/flag", ["true"], false],
    ["null", "/nothing", ["null"], false],
    ["an object", "/account", ["[object Object]"], false],
    ["an array", "/account/tags", ["a,b"], false],
    ["the whole arguments", "", ["x"], false],
    ["an escaped key", "/a~1b", ["slash"], true],
    ["an array element", "/items/1/name", ["second"], true]
  ])("%s → %s", (_, argument, allowed, holds) => {
    expect(ruleHolds(rule(argument, allowed), args)).toBe(holds)
  })

  it("never holds without arguments", () => {
    expect(ruleHolds(rule("/account/region", ["emea"]), undefined)).toBe(false)
  })
})
