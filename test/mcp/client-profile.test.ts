/**
 * How a 2025-era client's declared capabilities travel (docs/mcp.md, "Input requests"): reduced to a
 * profile, written into the session id of the gateway's `initialize` answer, read back from the
 * requests that carry it. Nothing is stored, and an id the gateway did not give is "not known".
 */
import { describe, expect, it } from "vitest"
import {
  answers,
  capabilitiesOf,
  noProfile,
  profileOf,
  profileOfSessionId,
  sessionIdFor
} from "../../src/mcp/calls/client-profile.js"
import { rawPost } from "../support/mcp-clients.js"
import { startTestGateway } from "../support/mcp-gateway.js"

describe("a client's profile of declared capabilities", () => {
  it.each([
    [{}, {}],
    [{ sampling: {} }, { sampling: {} }],
    [{ sampling: { tools: {}, context: {} } }, { sampling: { tools: {} } }],
    // An empty `elicitation` (2025-06-18) is form mode.
    [{ elicitation: {} }, { elicitation: { form: {} } }],
    [{ elicitation: { url: {} } }, { elicitation: { url: {} } }],
    [{ elicitation: { form: {}, url: {} } }, { elicitation: { form: {}, url: {} } }],
    // Roots without listChanged: the gateway relays no notifications into a shared backend session.
    [{ roots: { listChanged: true } }, { roots: {} }],
    [
      { experimental: { x: {} }, sampling: {}, roots: {} },
      { sampling: {}, roots: {} }
    ]
  ])("%j is declared to a backend as %j", (declared, toBackend) => {
    expect(capabilitiesOf(profileOf(declared))).toEqual(toBackend)
  })

  it("capabilities that are not objects declare nothing", () => {
    expect(profileOf(undefined)).toBe(noProfile)
    expect(profileOf([])).toBe(noProfile)
    expect(profileOf({ sampling: true, elicitation: "yes", roots: null })).toBe(noProfile)
  })

  it("a caller is asked only what it declared", () => {
    const profile = profileOf({ sampling: {}, roots: {} })
    expect(answers(profile, "sampling/createMessage")).toBe(true)
    expect(answers(profile, "roots/list")).toBe(true)
    expect(answers(profile, "elicitation/create")).toBe(false)
    expect(answers(profile, "tools/call")).toBe(false)
    expect(answers(profileOf({ elicitation: { url: {} } }), "elicitation/create")).toBe(true)
  })

  it("every profile survives the session id, and the ids differ", () => {
    for (let profile = 0; profile < 32; profile++) {
      const id = sessionIdFor(profile)
      expect(id).toMatch(/^g1\.[0-9a-v]{1,2}\.[0-9a-f]{24}$/)
      expect(profileOfSessionId(id)).toBe(profile)
    }
    expect(sessionIdFor(3)).not.toBe(sessionIdFor(3))
  })

  it.each([
    ["absent", undefined],
    ["repeated", ["g1.3.000000000000000000000000", "g1.3.000000000000000000000000"]],
    ["another server's", "3f1c2d6e-8a5b-4c7d-9e0f-1a2b3c4d5e6f"],
    ["out of range", "g1.10.000000000000000000000000"],
    ["short", "g1.3.0000"],
    ["with more after it", "g1.3.000000000000000000000000x"],
    ["upper case", "g1.3.00000000000000000000000A"]
  ])("a session id that is %s carries no profile", (_, value) => {
    expect(profileOfSessionId(value)).toBeUndefined()
  })
})

describe("the gateway's initialize answer", () => {
  it("gives a 2025-era client a session id recording what it declared, readable by a browser client", async () => {
    const gateway = await startTestGateway()
    try {
      const token = await gateway.token()
      const initialize = (capabilities: unknown, origin?: string) =>
        rawPost(
          gateway.mcpUrl,
          JSON.stringify({
            jsonrpc: "2.0",
            id: 1,
            method: "initialize",
            params: { protocolVersion: "2025-11-25", capabilities, clientInfo: { name: "c", version: "1" } }
          }),
          { authorization: `Bearer ${token}`, ...(origin === undefined ? {} : { origin }) }
        )
      const declared = await initialize({ sampling: {}, elicitation: {} })
      expect(declared.status).toBe(200)
      const id = declared.headers.get("mcp-session-id")
      expect(profileOfSessionId(id ?? undefined)).toBe(profileOf({ sampling: {}, elicitation: {} }))
      const none = await initialize({}, gateway.baseUrl)
      expect(profileOfSessionId(none.headers.get("mcp-session-id") ?? undefined)).toBe(noProfile)
      expect(none.headers.get("access-control-expose-headers")).toContain("Mcp-Session-Id")
    } finally {
      await gateway.close()
    }
  })
})
