/**
 * Naming (docs/mcp.md, "Naming"; issue: interoperability, "Names"): a backend's `naming` exposes its
 * original tool and prompt names (`prefix: ""`) or a custom prefix, and its original resource URIs
 * (`resource_uris: original`) — listed, template-expanded and inside results — so a single-backend or
 * collision-free deployment shows the backend's own names. A name two backends expose is exposed by
 * neither and logged; prefixes that would always collide are refused at configuration load.
 */
import { Either } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { parseConfig } from "../../src/config/load.js"
import { LogCapture } from "../support/logs.js"
import { alphaTools, commonTools, startBackend, type TestBackend } from "../support/mcp-backends.js"
import { connectClient } from "../support/mcp-clients.js"
import { startTestGateway, type TestGateway } from "../support/mcp-gateway.js"

const cleanup: Array<() => Promise<void>> = []
let alpha: TestBackend
let beta: TestBackend
beforeAll(async () => {
  alpha = await startBackend("alpha", alphaTools)
  beta = await startBackend("beta", (server) => {
    commonTools(server, "beta")
  })
  cleanup.push(
    () => alpha.stop(),
    () => beta.stop()
  )
})
afterAll(async () => {
  for (const step of cleanup.reverse()) await step()
})

const backend = (id: string, server: TestBackend, naming?: Record<string, unknown>) => ({
  id,
  url: server.url,
  allow_insecure_http: true,
  required: true,
  tool_rules: [{ tools: ["*"] }],
  ...(naming === undefined ? {} : { naming })
})

const gatewayWith = async (backends: ReadonlyArray<unknown>, logs?: LogCapture) => {
  const gateway: TestGateway = await startTestGateway({ patch: { backends }, ...(logs === undefined ? {} : { logs }) })
  cleanup.push(() => gateway.close())
  return gateway
}

describe("a backend exposing its original names", () => {
  it.each(["modern", "legacy"] as const)(
    "%s client: tools, prompts and resources keep the backend's own names and URIs, and work",
    async (era) => {
      const gateway = await gatewayWith([backend("alpha", alpha, { prefix: "", resource_uris: "original" })])
      const client = await connectClient(gateway.mcpUrl, await gateway.token(), era)
      const tools = (await client.listTools()).tools.map((tool) => tool.name)
      expect(tools).toEqual(expect.arrayContaining(["echo", "search", "progress", "slow"]))
      expect(tools.some((name) => name.includes("__"))).toBe(false)
      expect((await client.callTool({ name: "echo", arguments: { message: "hi" } })).content).toEqual([
        { type: "text", text: "hi" }
      ])
      expect((await client.listPrompts()).prompts.map((prompt) => prompt.name)).toContain("greeting")
      const prompt = await client.getPrompt({ name: "greeting", arguments: { name: "Ada" } })
      expect(prompt.messages[0]?.content).toEqual({ type: "text", text: "Hello Ada" })
      expect((await client.listResources()).resources.map((resource) => resource.uri)).toEqual(["note://readme"])
      expect((await client.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate)).toEqual([
        "note://notes/{id}"
      ])
      expect((await client.readResource({ uri: "note://readme" })).contents).toEqual([
        { uri: "note://readme", text: "alpha readme" }
      ])
      // A template-expanded URI is routed by the template's literal start.
      expect((await client.readResource({ uri: "note://notes/7" })).contents[0]).toMatchObject({
        uri: "note://notes/7",
        text: "note 7"
      })
      const completion = await client.complete({
        ref: { type: "ref/resource", uri: "note://notes/{id}" },
        argument: { name: "id", value: "1" }
      })
      expect(completion.completion.values).toEqual(["1", "10"])
      await client.close()
    }
  )

  it("a custom prefix names every tool and prompt with it", async () => {
    const gateway = await gatewayWith([backend("alpha", alpha, { prefix: "a." })])
    const client = await connectClient(gateway.mcpUrl, await gateway.token())
    const tools = (await client.listTools()).tools.map((tool) => tool.name)
    expect(tools).toContain("a.echo")
    expect(tools.every((name) => name.startsWith("a."))).toBe(true)
    expect((await client.callTool({ name: "a.echo", arguments: { message: "x" } })).content).toEqual([
      { type: "text", text: "x" }
    ])
    // Resources keep their gateway URIs unless `resource_uris: original`.
    expect((await client.listResources()).resources.map((resource) => resource.uri)).toEqual([
      "gateway://alpha/note://readme"
    ])
    await client.close()
  })
})

describe("two backends exposing original names", () => {
  it("a name both expose is exposed by neither (and logged); the others are exposed", async () => {
    const logs = new LogCapture()
    const gateway = await gatewayWith(
      [backend("alpha", alpha, { prefix: "" }), backend("beta", beta, { prefix: "" })],
      logs
    )
    const client = await connectClient(gateway.mcpUrl, await gateway.token())
    const tools = (await client.listTools()).tools.map((tool) => tool.name)
    expect(tools).toContain("slow")
    expect(tools).not.toContain("echo")
    expect(tools).not.toContain("search")
    await expect(client.callTool({ name: "echo", arguments: { message: "x" } })).rejects.toThrow(/Unknown tool/)
    const logged = logs.events("catalog.name_collision").filter((line) => line["kind"] === "tool")
    expect(logged.map((line) => line["key"]).sort()).toEqual(["echo", "search"])
    expect(logged[0]).toMatchObject({ level: "warn", backends: ["alpha", "beta"] })
    await client.close()
  })
})

describe("a tool rule naming no tool of its backend", () => {
  it("is logged once (catalog.rule_unmatched) with the name and whether it marks a write tool; the tool it meant falls to `*`", async () => {
    const logs = new LogCapture()
    const gateway = await gatewayWith(
      [
        {
          ...backend("alpha", alpha),
          tool_rules: [{ tools: ["*"] }, { tools: ["ecHo", "search"], write: true }]
        }
      ],
      logs
    )
    const client = await connectClient(gateway.mcpUrl, await gateway.token())
    expect((await client.listTools()).tools.map((tool) => tool.name)).toContain("alpha__echo")
    const logged = logs.events("catalog.rule_unmatched")
    expect(logged).toEqual([expect.objectContaining({ level: "warn", backend: "alpha", tool: "ecHo", write: true })])
    await client.close()
  })
})

describe("naming in the configuration", () => {
  const load = (backends: string) =>
    parseConfig(
      "/tmp/gateway.yaml",
      `server: { listen: "127.0.0.1:8080", public_url: "http://127.0.0.1:8080/mcp" }
auth: { issuer: "http://127.0.0.1:8080/sso" }
backends:
${backends}`,
      {}
    )

  it("refuses two backends with one prefix, naming both", () => {
    const result = load(`  - { id: a, url: "https://a.example/mcp", naming: { prefix: "x_" } }
  - { id: b, url: "https://b.example/mcp", naming: { prefix: "x_" } }`)
    expect(Either.isLeft(result) && result.left.message).toContain(
      `backends[1].naming.prefix: the name prefix "x_" is also backend "a"'s`
    )
  })

  it("refuses a custom prefix that equals another backend's default one", () => {
    const result = load(`  - { id: a, url: "https://a.example/mcp" }
  - { id: b, url: "https://b.example/mcp", naming: { prefix: "a__" } }`)
    expect(Either.isLeft(result) && result.left.message).toContain(`the name prefix "a__" is also backend "a"'s`)
  })

  it("refuses a prefix with characters no tool name may have, and an unknown resource_uris value", () => {
    const result = load(`  - { id: a, url: "https://a.example/mcp", naming: { prefix: "a/", resource_uris: "raw" } }`)
    expect(Either.isLeft(result)).toBe(true)
    const message = Either.isLeft(result) ? result.left.message : ""
    expect(message).toContain("backends[0].naming.prefix")
    expect(message).toContain("backends[0].naming.resource_uris")
  })

  it("allows any number of empty prefixes (collisions are settled when the catalog is built)", () => {
    const result = load(`  - { id: a, url: "https://a.example/mcp", naming: { prefix: "" } }
  - { id: b, url: "https://b.example/mcp", naming: { prefix: "" } }`)
    expect(Either.isRight(result)).toBe(true)
  })
})
