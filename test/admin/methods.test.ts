/**
 * Which methods the Management API answers on a path (src/admin/methods.ts): a path it serves called
 * with another method is 405 with these in `Allow`.
 */
import { describe, expect, it } from "vitest"
import { allowedMethods } from "../../src/admin/methods.js"

describe("allowedMethods", () => {
  it("lists every method of the most specific routes of a path, HEAD with GET; none for a path not served", () => {
    expect(allowedMethods("/api/v1/backends/crm")).toEqual(["GET", "PUT", "DELETE", "HEAD"])
    expect(allowedMethods("/api/v1/backends")).toEqual(["GET", "POST", "HEAD"])
    // The groups' own path, not an identity called "groups".
    expect(allowedMethods("/api/v1/identities/groups")).toEqual(["POST"])
    expect(allowedMethods("/api/v1/identities/u1")).toEqual(["PUT"])
    expect(allowedMethods("/api/v1/openapi.json")).toEqual(["GET", "HEAD"])
    // As the router reads a path: case, repeated or trailing slashes, percent-encoding, `;` suffixes.
    for (const path of ["/API/v1/backends", "/api/v1//backends", "/api/v1/backends/", "/api/v1/backends;x"]) {
      expect(allowedMethods(path), path).toEqual(["GET", "POST", "HEAD"])
    }
    expect(allowedMethods("/api/v1/identities/%67roups")).toEqual(["POST"])
    for (const path of ["/api/v1/nothing", "/api/v1/backends/a/b", "/", ""]) {
      expect(allowedMethods(path), path).toEqual([])
    }
  })
})
