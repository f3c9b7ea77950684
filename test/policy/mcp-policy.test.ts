/**
 * docs/access-policy.md through /mcp with the stored policy (real store, real backends and
 * clients): both /mcp paths give the same answers for the same view; a removed scope or permission
 * denies the very next request of a still-valid token; a running call whose permission is removed is
 * cancelled; prompts, resource reads and subscriptions are separate permissions.
 */
import { Effect, Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Permissions } from "../../src/policy/permissions.js"
import { PolicyWrites } from "../../src/policy/writes.js"
import { GroupRepo } from "../../src/store/groups.js"
import { type AccessInput, grantAccess, testActor } from "../support/grants.js"
import { alphaTools, commonTools, startBackend, type TestBackend } from "../support/mcp-backends.js"
import { connectClient, jsonRpcOf, rawPost } from "../support/mcp-clients.js"
import { startTestGateway, type TestGateway } from "../support/mcp-gateway.js"

let alpha: TestBackend
let beta: TestBackend
let gateway: TestGateway
const open: Array<{ close(): Promise<void> }> = []

beforeAll(async () => {
  alpha = await startBackend("alpha", alphaTools)
  beta = await startBackend("beta", (server) => commonTools(server, "beta"))
  gateway = await startTestGateway({
    policy: "store",
    patch: {
      backends: [
        {
          id: "alpha",
          url: alpha.url,
          allow_insecure_http: true,
          required: true,
          tool_rules: [
            { tools: ["*"] },
            { tools: ["internal_*"], publish: false },
            { tools: ["write_note"], write: true }
          ]
        },
        {
          id: "beta",
          url: beta.url,
          allow_insecure_http: true,
          required_scopes: ["beta:read"],
          tool_rules: [{ tools: ["*"] }]
        }
      ]
    }
  })
})
afterAll(async () => {
  for (const client of open) await client.close()
  await gateway?.close()
  for (const backend of [alpha, beta]) await backend?.stop()
})

/** A user with `access` (and `scopes`), a token for them, and their group's id. */
const userWith = async (access: ReadonlyArray<AccessInput>, scopes: ReadonlyArray<string> = []) => {
  const { userId, groupId } = await gateway.run(grantAccess(access, { scopes }))
  return { userId, groupId, token: await gateway.token({ subject: userId, scopes }) }
}

const connect = async (token: string, era: "modern" | "legacy" = "modern") => {
  const client = await connectClient(gateway.mcpUrl, token, era)
  open.push(client)
  return client
}

/** A request the direct path does not take (an unknown `_meta` key): the MCP SDK's handler answers it. */
const viaSdk = async (token: string, method: string, params: Record<string, unknown>) =>
  jsonRpcOf(
    await rawPost(
      gateway.mcpUrl,
      JSON.stringify({ jsonrpc: "2.0", id: 5, method, params: { ...params, _meta: { "com.example/trace": "t" } } }),
      { "mcp-protocol-version": "2025-11-25", authorization: `Bearer ${token}` }
    )
  )

const changeGroup = (groupId: string, permissions: unknown) =>
  gateway.run(
    Effect.gen(function* () {
      const group = yield* (yield* GroupRepo).find(groupId)
      yield* (yield* PolicyWrites).updateGroup(testActor, groupId, group!.revision, {
        permissions: Schema.decodeUnknownSync(Permissions)(permissions)
      })
    })
  )

const names = (tools: ReadonlyArray<{ readonly name: string }>) => tools.map((tool) => tool.name)

describe("the stored policy on /mcp", () => {
  it("both paths list and call alike for the same view; denied and unknown tools answer alike", async () => {
    const { token } = await userWith([{ endpoint_id: "alpha", tools: ["echo", "search", "write_note"] }])
    const client = await connect(token)
    // write_note is a write tool and the entry does not allow writes: hidden.
    expect(names((await client.listTools()).tools)).toEqual(["alpha__echo", "alpha__search"])
    const listed = await viaSdk(token, "tools/list", {})
    expect(names((listed["result"] as { tools: Array<{ name: string }> }).tools)).toEqual([
      "alpha__echo",
      "alpha__search"
    ])

    const direct = await client.callTool({ name: "alpha__echo", arguments: { message: "hi" } })
    const sdk = await viaSdk(token, "tools/call", { name: "alpha__echo", arguments: { message: "hi" } })
    expect(sdk["result"]).toEqual({ content: direct.content })
    for (const name of ["alpha__slow", "alpha__write_note", "alpha__internal_admin", "alpha__nope", "beta__search"]) {
      const refused = await client
        .callTool({ name, arguments: { text: "x", ms: 1, q: "x" } })
        .catch((error: Error) => error)
      expect(refused).toMatchObject({ code: -32602, message: expect.stringContaining(`Unknown tool: ${name}`) })
      const sdkRefused = await viaSdk(token, "tools/call", { name, arguments: { text: "x" } })
      expect(sdkRefused["error"]).toMatchObject({ code: -32602, message: `Unknown tool: ${name}` })
    }
  })

  it("a resource rule constrains the arguments: missing, other or non-string values are denied", async () => {
    const { token } = await userWith([
      { endpoint_id: "alpha", tools: ["echo"], resource_rules: [{ argument: "/message", allowed_values: ["ok"] }] }
    ])
    const client = await connect(token, "legacy")
    expect((await client.callTool({ name: "alpha__echo", arguments: { message: "ok" } })).content).toEqual([
      { type: "text", text: "ok" }
    ])
    for (const args of [{ message: "other" }, {}, { message: 1 }]) {
      const refused = await client.callTool({ name: "alpha__echo", arguments: args }).catch((error: Error) => error)
      expect(refused).toMatchObject({ code: -32602 })
    }
  })

  it("a scope removed from the group denies the next request of the still-valid token", async () => {
    const { token, groupId } = await userWith(
      [
        { endpoint_id: "alpha", tools: ["echo"] },
        { endpoint_id: "beta", tools: ["search"] }
      ],
      ["beta:read"]
    )
    const client = await connect(token)
    expect(names((await client.listTools()).tools)).toEqual(["alpha__echo", "beta__search"])
    await changeGroup(groupId, {
      scopes: [],
      access: [
        { endpoint_id: "alpha", tools: ["echo"] },
        { endpoint_id: "beta", tools: ["search"] }
      ]
    })
    expect(names((await client.listTools()).tools)).toEqual(["alpha__echo"])
    const refused = await client
      .callTool({ name: "beta__search", arguments: { q: "x" } })
      .catch((error: Error) => error)
    expect(refused).toMatchObject({ code: -32602 })
    // The grant itself removed: the next call is denied too.
    await changeGroup(groupId, { scopes: [], access: [] })
    expect(names((await client.listTools()).tools)).toEqual([])
  })

  it("a call whose permission is removed while it runs is cancelled; the backend sees the cancellation", async () => {
    const { token, groupId } = await userWith([{ endpoint_id: "alpha", tools: ["slow", "echo"] }])
    const client = await connect(token)
    const before = alpha.aborted.length
    const running = client.callTool({ name: "alpha__slow", arguments: { ms: 20_000 } }).catch((error: Error) => error)
    const slowCalls = () =>
      alpha.requests.filter((request) => request.body.includes('"tools/call"') && request.body.includes('"slow"'))
        .length
    const slowBefore = slowCalls()
    await expect.poll(slowCalls, { timeout: 5_000 }).toBeGreaterThan(slowBefore)
    const started = Date.now()
    await changeGroup(groupId, { access: [{ endpoint_id: "alpha", tools: ["echo"] }] })
    expect(await running).toMatchObject({ message: expect.stringContaining("access to it was withdrawn") })
    expect(Date.now() - started).toBeLessThan(5_000)
    await expect.poll(() => alpha.aborted.length, { timeout: 5_000 }).toBeGreaterThan(before)
    // What is still allowed keeps working.
    expect((await client.callTool({ name: "alpha__echo", arguments: { message: "still" } })).content).toEqual([
      { type: "text", text: "still" }
    ])
  })

  it("prompts and resource reads are separate permissions of the access entry", async () => {
    const tools = await userWith([{ endpoint_id: "alpha", tools: ["echo"] }])
    const client = await connect(tools.token)
    expect((await client.listPrompts()).prompts).toEqual([])
    expect((await client.listResources()).resources).toEqual([])
    const prompt = await client.getPrompt({ name: "alpha__greeting", arguments: { name: "x" } }).catch((e: Error) => e)
    expect(prompt).toMatchObject({ code: -32602 })
    const read = await client.readResource({ uri: "gateway://alpha/note://readme" }).catch((e: Error) => e)
    expect(read).toMatchObject({ message: expect.stringContaining("Resource not found") })

    const more = await userWith([{ endpoint_id: "alpha", tools: [], prompts: ["greeting"], read_resources: true }])
    const other = await connect(more.token)
    expect(names((await other.listTools()).tools)).toEqual([])
    expect(names((await other.listPrompts()).prompts)).toEqual(["alpha__greeting"])
    expect((await other.readResource({ uri: "gateway://alpha/note://readme" })).contents).toEqual([
      { uri: "gateway://alpha/note://readme", text: "alpha readme" }
    ])
  })

  it("a token whose held scopes open no backend that needs scopes, where none opens without: 403", async () => {
    const only = await startTestGateway({
      policy: "store",
      patch: {
        backends: [
          {
            id: "beta",
            url: beta.url,
            allow_insecure_http: true,
            required_scopes: ["beta:read"],
            tool_rules: [{ tools: ["*"] }]
          }
        ]
      }
    })
    try {
      const { userId } = await only.run(grantAccess([{ endpoint_id: "beta", tools: ["search"] }]))
      // The token carries beta:read, but the user does not hold it.
      const token = await only.token({ subject: userId, scopes: ["beta:read"] })
      const answer = await rawPost(
        only.mcpUrl,
        JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }),
        {
          authorization: `Bearer ${token}`
        }
      )
      expect(answer.status).toBe(403)
      expect(answer.headers.get("www-authenticate")).toContain('scope="beta:read"')
    } finally {
      await only.close()
    }
  })
})
