/**
 * The input-schema validators of HTTP tools (src/sources/http/input-schema.ts): compiled once, kept in
 * a bounded cache, two tools may share a `$id`, and errors name the argument's path, never its value.
 */
import { describe, expect, it } from "vitest"
import { compiledCount, maxCompiled } from "../../../src/json-schema.js"
import { compileInputSchema, describeError } from "../../../src/sources/http/input-schema.js"

describe("input schemas", () => {
  it("the same schema text is compiled once, whatever object carries it", () => {
    const first = compileInputSchema({ type: "object", properties: { a: { type: "string" } } })
    const second = compileInputSchema({ type: "object", properties: { a: { type: "string" } } })
    expect(first.ok && second.ok && first.validate === second.validate).toBe(true)
  })

  it("the cache holds at most maxCompiled validators", () => {
    for (let index = 0; index < maxCompiled + 50; index++)
      expect(compileInputSchema({ type: "object", properties: { [`p${index}`]: { type: "integer" } } }).ok).toBe(true)
    expect(compiledCount()).toBeLessThanOrEqual(maxCompiled)
  })

  it("two different schemas with the same $id both compile and each validates by its own rules", () => {
    const one = compileInputSchema({ $id: "https://schemas.example.test/args", type: "object", required: ["a"] })
    const two = compileInputSchema({ $id: "https://schemas.example.test/args", type: "object", required: ["b"] })
    if (!one.ok || !two.ok) throw new Error("did not compile")
    expect([one.validate({ a: 1 }), two.validate({ a: 1 })]).toEqual([true, false])
  })

  it("an error message names the path and the rule, never the value", () => {
    const compiled = compileInputSchema({
      type: "object",
      properties: { "a/b": { type: "object", properties: { "c~d": { type: "string", maxLength: 3 } } } }
    })
    if (!compiled.ok) throw new Error(compiled.message)
    expect(compiled.validate({ "a/b": { "c~d": "secret-value" } })).toBe(false)
    const message = describeError(compiled.validate.errors)
    expect(message).toBe("argument /a~1b/c~0d: must NOT have more than 3 characters")
    expect(message).not.toContain("secret-value")
  })

  it("patterns run in linear time: a backtracking pattern against a hostile string answers at once", () => {
    // 30 `a` and a `!` cost JavaScript's engine about 7 s of backtracking (twice that per `a` more), RE2
    // microseconds: the bound below is three orders of magnitude from either, not a speed target.
    const started = performance.now()
    const hostile = `${"a".repeat(30)}!`
    for (const schema of [
      { type: "object", properties: { s: { type: "string", pattern: "^(a+)+$" } } },
      { type: "object", patternProperties: { "^(a+)+$": { type: "string" } }, additionalProperties: false },
      { type: "object", propertyNames: { pattern: "^(a+)+$" } }
    ]) {
      const compiled = compileInputSchema(schema)
      if (!compiled.ok) throw new Error(compiled.message)
      const args = "properties" in schema ? { s: hostile } : { [hostile]: "x" }
      expect(compiled.validate(args), JSON.stringify(schema)).toBe(false)
      expect(compiled.validate("properties" in schema ? { s: "aaa" } : { aaa: "x" })).toBe(true)
    }
    expect(performance.now() - started).toBeLessThan(1_000)
  })

  it("patterns are RE2: JavaScript escapes are translated, lookaround and backreferences do not compile", () => {
    const accented = compileInputSchema({ type: "string", pattern: "^caf\\u00e9$" })
    if (!accented.ok) throw new Error(accented.message)
    expect([accented.validate("café"), accented.validate("cafe")]).toEqual([true, false])
    const named = compileInputSchema({ type: "string", pattern: "^(?<year>[0-9]{4})-[0-9]{2}$" })
    expect(named.ok && named.validate("2026-11")).toBe(true)
    // Each schema is checked against its own pattern, however many one engine has compiled.
    const [a, b] = ["^a$", "^b$"].map((pattern) => compileInputSchema({ type: "string", pattern }))
    expect(a?.ok && [a.validate("a"), a.validate("b")]).toEqual([true, false])
    expect(b?.ok && [b.validate("a"), b.validate("b")]).toEqual([false, true])
    for (const pattern of ["^(?=a)a$", "^(a)\\1$", "(?<!x)y"]) {
      const refused = compileInputSchema({ type: "string", pattern })
      expect(refused.ok, pattern).toBe(false)
      if (!refused.ok) {
        expect(refused.message).toContain(`pattern ${JSON.stringify(pattern)} is not supported`)
        expect(refused.message).toContain("no lookaround, no backreference")
      }
    }
  })
})
