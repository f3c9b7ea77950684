/**
 * What a backend receives besides the call (src/mcp/upstream/auth.ts; docs/mcp.md, "Backends"): its
 * fixed headers by lower-case name and its own credentials. Both the MCP client and the call channel
 * send exactly these, so the rules hold on either path.
 */
import { describe, expect, it } from "vitest"
import { backendRequestAuth } from "../../../src/mcp/upstream/auth.js"
import { configOf } from "../../fixtures/config/base.js"

const authOf = (backend: Record<string, unknown>) => {
  const [config] = configOf({ backends: [{ id: "a", ...backend }] }).backends
  return backendRequestAuth(config!, () => 0)
}

describe("backend request credentials", () => {
  it("credentials in the backend URL are sent as Basic, unless a bearer token is sent", async () => {
    expect(authOf({ url: "https://svc:p%40ss%3Aword@a.example.com/mcp" })).toEqual({
      headers: { authorization: `Basic ${Buffer.from("svc:p@ss:word").toString("base64")}` },
      tokens: undefined
    })
    const bearer = authOf({
      url: "https://svc:secret@a.example.com/mcp",
      credentials: { type: "bearer", token: "tok" }
    })
    expect(bearer.headers).toEqual({})
    expect(await bearer.tokens?.token()).toBe("tok")
  })

  it("a configured Authorization header, in any case, is the one sent: the URL's credentials are not added", () => {
    expect(
      authOf({
        url: "https://svc:secret@a.example.com/mcp",
        headers: { AUTHORIZATION: "Bearer configured", "X-Tenant": "t1" }
      }).headers
    ).toEqual({ authorization: "Bearer configured", "x-tenant": "t1" })
  })

  it("basic credentials are sent as Basic, and the URL's are not", () => {
    expect(
      authOf({
        url: "https://svc:secret@a.example.com/mcp",
        credentials: { type: "basic", username: "robot", password: "pw" }
      }).headers
    ).toEqual({ authorization: `Basic ${Buffer.from("robot:pw").toString("base64")}` })
  })
})
