/**
 * `access[].tools: ["*"]` (docs/access-policy.md, "Permission object"): every tool the backend
 * publishes, now and later, through real /mcp calls on both eras — write tools still need
 * `allow_write_requests`, resource rules still hold for every call, unpublished tools stay hidden, and
 * other backends are not opened by it.
 */
import type { McpServer } from "@modelcontextprotocol/server"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as z from "zod/v4"
import { type AccessInput, grantAccess } from "../support/grants.js"
import { commonTools, startBackend, type TestBackend } from "../support/mcp-backends.js"
import { connectClient } from "../support/mcp-clients.js"
import { startTestGateway, type TestGateway } from "../support/mcp-gateway.js"

let gamma: TestBackend
let beta: TestBackend
let gateway: TestGateway
const open: Array<{ close(): Promise<void> }> = []
// The backend builds a server per request, so what it offers follows this at once.
const offered = ["first", "write_it", "internal_x"]

const register = (server: McpServer) => {
  for (const name of offered) {
    server.registerTool(name, { inputSchema: z.object({ text: z.string().optional() }) }, async ({ text }) => ({
      content: [{ type: "text", text: `${name}:${text ?? ""}` }]
    }))
  }
}

beforeAll(async () => {
  gamma = await startBackend("gamma", register, { era: "modern-only" })
  beta = await startBackend("beta", (server) => commonTools(server, "beta"))
  gateway = await startTestGateway({
    policy: "store",
    patch: {
      backends: [
        {
          id: "gamma",
          url: gamma.url,
          allow_insecure_http: true,
          required: true,
          tool_rules: [
            { tools: ["*"] },
            { tools: ["internal_*"], publish: false },
            { tools: ["write_it"], write: true }
          ]
        },
        { id: "beta", url: beta.url, allow_insecure_http: true, tool_rules: [{ tools: ["*"] }] }
      ]
    }
  })
})
afterAll(async () => {
  for (const client of open) await client.close()
  await gateway?.close()
  for (const backend of [gamma, beta]) await backend?.stop()
})

const connect = async (access: ReadonlyArray<AccessInput>, era: "modern" | "legacy" = "modern") => {
  const { userId } = await gateway.run(grantAccess(access))
  const client = await connectClient(gateway.mcpUrl, await gateway.token({ subject: userId }), era)
  open.push(client)
  return client
}

const listed = async (client: Awaited<ReturnType<typeof connect>>) =>
  (await client.listTools()).tools.map((tool) => tool.name).sort()

const call = (client: Awaited<ReturnType<typeof connect>>, name: string, text = "hi") =>
  client.callTool({ name, arguments: { text } }).then(
    (result) => result.content,
    (error: Error) => error
  )

describe('access[].tools: ["*"] on /mcp', () => {
  it('"*" grants every published read tool of its backend, including one published later; not write tools, not other backends', async () => {
    const client = await connect([{ endpoint_id: "gamma", tools: ["*"] }])
    const legacy = await connect([{ endpoint_id: "gamma", tools: ["*"] }], "legacy")
    for (const each of [client, legacy]) {
      expect(await listed(each)).toEqual(["gamma__first"])
      expect(await call(each, "gamma__first")).toEqual([{ type: "text", text: "first:hi" }])
      for (const refused of ["gamma__write_it", "gamma__internal_x", "beta__echo"]) {
        expect(await call(each, refused)).toMatchObject({ code: -32602, message: `Unknown tool: ${refused}` })
      }
    }
    // A tool the backend publishes later is covered without any policy write.
    offered.push("second")
    gamma.toolsChanged()
    await expect.poll(() => listed(client), { timeout: 3_000 }).toEqual(["gamma__first", "gamma__second"])
    expect(await call(legacy, "gamma__second")).toEqual([{ type: "text", text: "second:hi" }])
  })

  it('"*" with allow_write_requests covers write tools too; its resource rules hold for every tool', async () => {
    const client = await connect([
      {
        endpoint_id: "gamma",
        tools: ["*"],
        allow_write_requests: true,
        resource_rules: [{ argument: "/text", allowed_values: ["ok"] }]
      }
    ])
    expect(await listed(client)).toContain("gamma__write_it")
    expect(await call(client, "gamma__write_it", "ok")).toEqual([{ type: "text", text: "write_it:ok" }])
    expect(await call(client, "gamma__first", "ok")).toEqual([{ type: "text", text: "first:ok" }])
    for (const name of ["gamma__write_it", "gamma__first"]) {
      expect(await call(client, name, "other")).toMatchObject({ code: -32602, message: `Unknown tool: ${name}` })
    }
  })

  it('an entry naming a tool and a "*" entry of the same backend add up: the named write is callable, the rest read-only', async () => {
    const client = await connect([
      { endpoint_id: "gamma", tools: ["*"] },
      { endpoint_id: "gamma", tools: ["write_it"], allow_write_requests: true }
    ])
    expect(await listed(client)).toEqual(expect.arrayContaining(["gamma__first", "gamma__write_it"]))
    expect(await call(client, "gamma__write_it")).toEqual([{ type: "text", text: "write_it:hi" }])
  })
})
