import { describe, expect, it } from "vitest"
import { orderedId } from "../../src/store/ordered-id.js"

describe("ordered ids (audit events)", () => {
  it("are UUIDv7 and sort in creation order, also thousands within one millisecond", () => {
    const ids = Array.from({ length: 10_000 }, orderedId)
    for (const id of ids.slice(0, 50))
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    expect([...ids].sort()).toEqual(ids)
    expect(new Set(ids).size).toBe(ids.length)
  })
})
