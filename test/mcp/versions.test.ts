/**
 * Advertised versions (docs/mcp.md, "Protocol"; issue: interoperability, "Advertised capabilities match
 * what is delivered"): `server/discover` and both eras' unsupported-version errors list every protocol
 * revision the gateway serves — the 2026-07-28 one and the 2025-era ones — and clients of both eras
 * still connect.
 */
import { SUPPORTED_PROTOCOL_VERSIONS } from "@modelcontextprotocol/server"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { connectClient, jsonRpcOf, rawPost } from "../support/mcp-clients.js"
import { startTestGateway, type TestGateway } from "../support/mcp-gateway.js"

let gateway: TestGateway
beforeAll(async () => {
  gateway = await startTestGateway({})
})
afterAll(async () => {
  await gateway?.close()
})

const every = ["2026-07-28", ...SUPPORTED_PROTOCOL_VERSIONS]

const modern = async (method: string, version: string) =>
  rawPost(
    gateway.mcpUrl,
    JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method,
      params: {
        _meta: {
          "io.modelcontextprotocol/protocolVersion": version,
          "io.modelcontextprotocol/clientInfo": { name: "versions", version: "1.0.0" },
          "io.modelcontextprotocol/clientCapabilities": {}
        }
      }
    }),
    { authorization: `Bearer ${await gateway.token()}`, "mcp-protocol-version": version, "mcp-method": method }
  )

describe("the versions the gateway serves", () => {
  it("server/discover lists the 2026-07-28 revision and every 2025-era one", async () => {
    const answer = (await jsonRpcOf(await modern("server/discover", "2026-07-28"))) as {
      result: { supportedVersions: Array<string> }
    }
    expect([...answer.result.supportedVersions].sort()).toEqual([...new Set(every)].sort())
    expect(answer.result.supportedVersions[0]).toBe("2026-07-28")
  })

  it("a 2026-era request naming an unknown revision is told every served version", async () => {
    const response = await modern("tools/list", "2027-01-01")
    expect(response.status).toBe(400)
    const answer = (await response.json()) as { error: { code: number; data: { supported: Array<string> } } }
    expect(answer.error.code).toBe(-32022)
    expect([...answer.error.data.supported].sort()).toEqual([...new Set(every)].sort())
  })

  it("a 2025-era request naming an unknown version is told every served version", async () => {
    const response = await rawPost(
      gateway.mcpUrl,
      JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }),
      { authorization: `Bearer ${await gateway.token()}`, "mcp-protocol-version": "1999-01-01" }
    )
    expect(response.status).toBe(400)
    const answer = (await response.json()) as { error: { message: string } }
    expect(answer.error.message).toContain("Unsupported protocol version: 1999-01-01 (supported versions: 2026-07-28, ")
    for (const version of SUPPORTED_PROTOCOL_VERSIONS) expect(answer.error.message).toContain(version)
  })

  it.each(["modern", "legacy"] as const)("a %s client still connects and lists tools", async (era) => {
    const client = await connectClient(gateway.mcpUrl, await gateway.token(), era)
    expect((await client.listTools()).tools).toEqual([])
    await client.close()
  })
})
