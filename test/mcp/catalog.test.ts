/**
 * The aggregated catalog (docs/mcp.md; docs/access-policy.md, "Rules"): several real backends
 * (2025-era and 2026-era, colliding tool names), three kinds of client, publication, scopes, pagination,
 * prompts, resources, templates and completion.
 */
import type { Client } from "@modelcontextprotocol/client"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { alphaTools, commonTools, startBackend, startLegacyBackend, type TestBackend } from "../support/mcp-backends.js"
import { connectClient, connectV1Client } from "../support/mcp-clients.js"
import { startTestGateway, type TestGateway } from "../support/mcp-gateway.js"

let alpha: TestBackend
let beta: TestBackend
let legacy: TestBackend
let gateway: TestGateway
const open: Array<{ close(): Promise<void> }> = []

beforeAll(async () => {
  alpha = await startBackend("alpha", alphaTools)
  beta = await startBackend("beta", (server) => commonTools(server, "beta"), { era: "modern-only" })
  legacy = await startLegacyBackend("legacy")
  const backend = (id: string, url: string, extra: Record<string, unknown> = {}) => ({
    id,
    url,
    allow_insecure_http: true,
    ...extra
  })
  gateway = await startTestGateway({
    patch: {
      catalog: { page_size: 3 },
      backends: [
        backend("alpha", alpha.url, {
          required: true,
          tool_rules: [
            { tools: ["*"] },
            { tools: ["internal_*"], publish: false },
            { tools: ["write_note"], write: true }
          ]
        }),
        backend("beta", beta.url, { required_scopes: ["beta:read"], tool_rules: [{ tools: ["search"] }] }),
        backend("legacy", legacy.url, { tool_rules: [{ tools: ["search", "legacy_echo"] }] })
      ]
    }
  })
})
afterAll(async () => {
  for (const client of open) await client.close()
  await gateway?.close()
  for (const backend of [alpha, beta, legacy]) await backend?.stop()
})

const connect = async (era: "modern" | "legacy", scopes: ReadonlyArray<string> = []) => {
  const client = await connectClient(gateway.mcpUrl, await gateway.token({ scopes }), era)
  open.push(client)
  return client
}

const allToolNames = [
  "alpha__chatty",
  "alpha__echo",
  "alpha__progress",
  "alpha__search",
  "alpha__slow",
  "alpha__write_note",
  "beta__search",
  "legacy__legacy_echo",
  "legacy__search"
]

describe("aggregated catalog", () => {
  it.each(["modern", "legacy"] as const)("a %s-era client sees every published tool, collision-free", async (era) => {
    const client = await connect(era, ["beta:read"])
    expect(client.getProtocolEra()).toBe(era)
    const { tools } = await client.listTools()
    expect(tools.map((tool) => tool.name)).toEqual(allToolNames)
    for (const name of ["alpha__search", "beta__search", "legacy__search"]) {
      const result = await client.callTool({ name, arguments: { q: "x" } })
      expect(result.content).toEqual([{ type: "text", text: `${name.split("__")[0]}:x` }])
    }
  })

  it("an older (1.x SDK) client lists and calls through the gateway", async () => {
    const client = await connectV1Client(gateway.mcpUrl, await gateway.token({ scopes: ["beta:read"] }))
    open.push(client)
    const names: Array<string> = []
    let cursor: string | undefined
    do {
      const page = await client.listTools(cursor === undefined ? {} : { cursor })
      names.push(...page.tools.map((tool) => tool.name))
      cursor = page.nextCursor
    } while (cursor !== undefined && names.length < 100)
    expect(names).toEqual(allToolNames)
    const result = await client.callTool({ name: "legacy__legacy_echo", arguments: { message: "hi" } })
    expect(result.content).toEqual([{ type: "text", text: "hi" }])
  })

  it("unpublished tools are absent and calling one answers exactly like an unknown tool", async () => {
    const client = await connect("modern", ["beta:read"])
    const names = (await client.listTools()).tools.map((tool) => tool.name)
    expect(names).not.toContain("alpha__internal_admin")
    expect(names).not.toContain("beta__echo")
    const unpublished = await client
      .callTool({ name: "alpha__internal_admin", arguments: {} })
      .catch((error: Error) => error)
    const unknown = await client.callTool({ name: "alpha__nope", arguments: {} }).catch((error: Error) => error)
    expect(unpublished).toBeInstanceOf(Error)
    expect((unpublished as Error & { code: number }).code).toBe(-32602)
    expect((unpublished as Error).message.replace("internal_admin", "X")).toBe(
      (unknown as Error).message.replace("nope", "X")
    )
  })

  it("a token without a backend's required scopes does not see or reach that backend", async () => {
    const client = await connect("modern")
    const names = (await client.listTools()).tools.map((tool) => tool.name)
    expect(names).toEqual(allToolNames.filter((name) => !name.startsWith("beta__")))
    const denied = await client.callTool({ name: "beta__search", arguments: { q: "x" } }).catch((error: Error) => error)
    expect((denied as Error & { code: number }).code).toBe(-32602)
  })

  it("pages across backends with opaque cursors; a bad cursor is invalid params", async () => {
    const client = await connect("modern", ["beta:read"])
    const seen: Array<string> = []
    let cursor: string | undefined
    do {
      // `request` fetches one page; `listTools()` would walk them all itself.
      const page = await client.request({ method: "tools/list", params: cursor === undefined ? {} : { cursor } })
      if (cursor === undefined) expect(page.tools).toHaveLength(3)
      seen.push(...page.tools.map((tool) => tool.name))
      cursor = page.nextCursor
    } while (cursor !== undefined && seen.length < 100)
    expect(seen).toEqual(allToolNames)
    const bad = await client.listTools({ cursor: "not-a-cursor" }).catch((error: Error & { code: number }) => error)
    expect((bad as Error & { code: number }).code).toBe(-32602)
  })

  it("serves prompts, resources, templates and completion under exposed names", async () => {
    const client = await connect("modern")
    const { prompts } = await client.listPrompts()
    expect(prompts.map((prompt) => prompt.name)).toEqual(["alpha__greeting"])
    const prompt = await client.getPrompt({ name: "alpha__greeting", arguments: { name: "Ada" } })
    expect(prompt.messages[0]?.content).toEqual({ type: "text", text: "Hello Ada" })

    const { resources } = await client.listResources()
    expect(resources.map((resource) => resource.uri)).toEqual(["gateway://alpha/note://readme"])
    const readme = await client.readResource({ uri: "gateway://alpha/note://readme" })
    expect(readme.contents).toEqual([{ uri: "gateway://alpha/note://readme", text: "alpha readme" }])

    const { resourceTemplates } = await client.listResourceTemplates()
    expect(resourceTemplates.map((template) => template.uriTemplate)).toEqual(["gateway://alpha/note://notes/{id}"])
    const note = await client.readResource({ uri: "gateway://alpha/note://notes/7" })
    expect(note.contents[0]).toMatchObject({ uri: "gateway://alpha/note://notes/7", text: "note 7" })

    const completion = await client.complete({
      ref: { type: "ref/resource", uri: "gateway://alpha/note://notes/{id}" },
      argument: { name: "id", value: "1" }
    })
    expect(completion.completion.values).toEqual(["1", "10"])

    const missing = await client.readResource({ uri: "gateway://beta/whatever" }).catch((error: Error) => error)
    expect(missing).toBeInstanceOf(Error)
  })

  it("answers ping (2025-era; the 2026-07-28 revision has no ping)", async () => {
    const client: Client = await connect("legacy")
    await expect(client.ping()).resolves.toBeDefined()
  })
})
