/**
 * The input-schema validators of HTTP tools (src/sources/http/input-schema.ts): compiled once, kept in
 * a bounded cache, two tools may share a `$id`, and errors name the argument's path, never its value.
 */
import { describe, expect, it } from "vitest"
import {
  compiledCount,
  compileInputSchema,
  describeError,
  maxCompiled
} from "../../../src/sources/http/input-schema.js"

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
})
