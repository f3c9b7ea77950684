/**
 * Tool groups and HTTP tools in the catalog (docs/tool-sources.md, "Tool groups and HTTP tools in the
 * catalog"): real MCP backends, a real gateway with the stored policy, managed sources set on the loaded
 * configuration as composition sets them, and HTTP tools sent to a real loopback service by the real
 * HttpTools client, which records what it sent (test/support/recorded-http-tools.ts). Every answer is compared on both
 * /mcp paths: the gateway's direct answer and the MCP SDK's handler.
 */
import { Effect, Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Permissions } from "../../src/policy/permissions.js"
import { PolicyWrites } from "../../src/policy/writes.js"
import { type HttpEndpoint, HttpTool, noManagedSources, ToolGroup } from "../../src/sources/schema.js"
import { GroupRepo } from "../../src/store/groups.js"
import {
  approvalIdOf,
  browserOf,
  type OpsBackend,
  opsBackendConfig,
  resume,
  review,
  startOps
} from "../support/approvals.js"
import { type AccessInput, grantAccess, testActor } from "../support/grants.js"
import { alphaTools, commonTools, startBackend, type TestBackend } from "../support/mcp-backends.js"
import { connectClient, jsonRpcOf, rawPost } from "../support/mcp-clients.js"
import { startTestGateway, type TestGateway } from "../support/mcp-gateway.js"
import type { LoopbackServer } from "../support/mcp-http.js"
import { type RecordedHttpTools, recordedHttpTools, startEchoService } from "../support/recorded-http-tools.js"

/** An HTTP endpoint as a generation runs it, from the stored shape (defaults applied by the schema). */
const httpEndpoint = (
  kind: HttpEndpoint["kind"],
  input: Record<string, unknown>,
  tools: ReadonlyArray<Record<string, unknown>>
): HttpEndpoint => {
  const decoded = Schema.decodeUnknownSync(HttpTool)({ ...input, tool: tools[0] })
  const { tool: _, ...endpoint } = decoded
  return {
    kind,
    ...endpoint,
    credentials: endpoint.credentials,
    tools: tools.map((tool) => Schema.decodeUnknownSync(HttpTool)({ id: decoded.id, tool }).tool)
  }
}
const group = (input: Record<string, unknown>) => Schema.decodeUnknownSync(ToolGroup)(input)

const cityTool = (url: string) => ({
  name: "forecast",
  title: "Forecast",
  description: "The weather in a city",
  method: "GET",
  url: `${url}/forecast/{city}`,
  input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
})

let alpha: TestBackend
let beta: TestBackend
let ops: OpsBackend
let service: LoopbackServer
let http: RecordedHttpTools
let gateway: TestGateway

beforeAll(async () => {
  alpha = await startBackend("alpha", alphaTools)
  beta = await startBackend("beta", (server) => commonTools(server, "beta"))
  ops = await startOps()
  service = await startEchoService()
  const origin = `http://127.0.0.1:${service.port}`
  http = recordedHttpTools()
  const sources = {
    ...noManagedSources,
    http: [
      httpEndpoint("http_tool", { id: "weather", allow_insecure_http: true, tool_rules: [{ tools: ["*"] }] }, [
        cityTool(origin),
        { name: "slow_forecast", method: "GET", url: `${origin}/slow/{city}` }
      ]),
      httpEndpoint(
        "openapi_import",
        {
          id: "crm",
          allow_insecure_http: true,
          tool_rules: [{ tools: ["get_*"] }, { tools: ["delete_*"], write: true }]
        },
        [
          { name: "get_contact", method: "GET", url: `${origin}/contacts/{id}` },
          { name: "delete_contact", method: "DELETE", url: `${origin}/contacts/{id}` },
          { name: "list_secrets", method: "GET", url: `${origin}/secrets` }
        ]
      ),
      httpEndpoint(
        "http_tool",
        { id: "vault", allow_insecure_http: true, required_scopes: ["vault:read"], tool_rules: [{ tools: ["*"] }] },
        [{ name: "open", method: "GET", url: `${origin}/vault` }]
      ),
      httpEndpoint(
        "http_tool",
        {
          id: "payments",
          allow_insecure_http: true,
          tool_rules: [{ tools: ["refund"], write: true, approval: { operation_id_argument: "/operation_id" } }]
        },
        [
          {
            name: "refund",
            method: "POST",
            url: `${origin}/refunds/{operation_id}`,
            input_schema: { type: "object", required: ["operation_id"] }
          }
        ]
      ),
      // Exposes `beta__search`, beta's own name: a collision, so neither is exposed.
      httpEndpoint(
        "http_tool",
        { id: "shadow", allow_insecure_http: true, naming: { prefix: "beta__" }, tool_rules: [{ tools: ["*"] }] },
        [{ name: "search", method: "GET", url: `${origin}/shadow` }]
      )
    ],
    toolGroups: [
      group({
        id: "toolbox",
        members: [
          { endpoint: "alpha", tool: "echo" },
          { endpoint: "beta", tool: "search" },
          { endpoint: "alpha", tool: "write_*" },
          { endpoint: "weather", tool: "forecast" },
          { endpoint: "crm", tool: "get_*" },
          // Not published by alpha, not a tool of crm's that crm publishes, another group: none is a member.
          { endpoint: "alpha", tool: "internal_admin" },
          { endpoint: "crm", tool: "list_secrets" },
          { endpoint: "strict", tool: "echo" }
        ]
      }),
      group({
        id: "strict",
        members: [{ endpoint: "beta", tool: "echo" }],
        tool_rules: [{ tools: ["echo"], write: true, approval: { required_approvals: 1 } }]
      }),
      group({ id: "deployers", members: [{ endpoint: "ops", tool: "deploy*" }] }),
      group({ id: "locked", required_scopes: ["locked:use"], members: [{ endpoint: "alpha", tool: "echo" }] }),
      group({
        id: "clash",
        members: [
          { endpoint: "alpha", tool: "search" },
          { endpoint: "beta", tool: "search" },
          { endpoint: "alpha", tool: "echo" }
        ]
      })
    ]
  }
  gateway = await startTestGateway({
    policy: "store",
    sources,
    httpTools: http.layer,
    patch: {
      backends: [
        {
          id: "alpha",
          url: alpha.url,
          allow_insecure_http: true,
          tool_rules: [{ tools: ["echo", "search"] }, { tools: ["write_note"], write: true }]
        },
        { id: "beta", url: beta.url, allow_insecure_http: true, tool_rules: [{ tools: ["*"] }] },
        opsBackendConfig(ops.url)
      ]
    }
  })
})
afterAll(async () => {
  await gateway?.close()
  await Promise.all([alpha?.stop(), beta?.stop(), ops?.stop(), service?.stop()])
})

const person = async (access: ReadonlyArray<AccessInput>, roles: ReadonlyArray<string> = []) => {
  const { userId } = await gateway.run(grantAccess(access, { roles }))
  return { userId, token: await gateway.token({ subject: userId }) }
}

/** The same request on the direct path and on the MCP SDK's (an extra `_meta` key sends it there). */
const onBothPaths = async (token: string, method: string, params: Record<string, unknown>) => {
  const post = (extra: Record<string, unknown>) =>
    rawPost(gateway.mcpUrl, JSON.stringify({ jsonrpc: "2.0", id: 7, method, params: { ...params, ...extra } }), {
      "mcp-protocol-version": "2025-11-25",
      authorization: `Bearer ${token}`
    }).then(jsonRpcOf)
  const direct = await post({})
  const sdk = await post({ _meta: { "com.example/path": "sdk" } })
  return { direct, sdk }
}

/** tools/list on both paths: they must agree; the names. */
const listed = async (token: string) => {
  const { direct, sdk } = await onBothPaths(token, "tools/list", {})
  expect(sdk["result"]).toEqual(direct["result"])
  return (direct["result"] as { tools: Array<{ name: string }> }).tools
}

/** A write needing approval, on both paths: each asks for an approval of its own; both answers. */
const pendingOnBothPaths = async (token: string, name: string, args: Record<string, unknown>) => {
  const { direct, sdk } = await onBothPaths(token, "tools/call", { name, arguments: args })
  return [direct, sdk].map(
    (answer) => (answer["result"] as { structuredContent: Record<string, unknown> }).structuredContent
  )
}

/** tools/call on both paths: they must agree; the JSON-RPC answer. */
const called = async (token: string, name: string, args: Record<string, unknown>) => {
  const { direct, sdk } = await onBothPaths(token, "tools/call", { name, arguments: args })
  expect(sdk["result"] ?? sdk["error"]).toEqual(direct["result"] ?? direct["error"])
  return direct
}

const textOf = (answer: Record<string, unknown>) =>
  ((answer["result"] as { content: Array<{ text: string }> }).content[0] ?? { text: "" }).text

describe("tool groups", () => {
  it("list their members' published tools as <group>__<original>, only to a user the group is granted", async () => {
    const grouped = await person([{ endpoint_id: "toolbox", tools: ["*"] }])
    expect((await listed(grouped.token)).map((tool) => tool.name)).toEqual([
      "toolbox__echo",
      "toolbox__forecast",
      "toolbox__get_contact",
      "toolbox__search"
    ])
    // Granted alpha itself, not the group: alpha's tools, none of the group's.
    const alphaOnly = await person([{ endpoint_id: "alpha", tools: ["*"] }])
    expect((await listed(alphaOnly.token)).map((tool) => tool.name)).toEqual(["alpha__echo", "alpha__search"])
    const refused = await called(alphaOnly.token, "toolbox__search", { q: "x" })
    expect(refused["error"]).toMatchObject({ code: -32602, message: "Unknown tool: toolbox__search" })
  })

  it("a call of a group's tool executes on its member's backend (or HTTP endpoint), decided by the group's grant", async () => {
    const grouped = await person([{ endpoint_id: "toolbox", tools: ["search", "forecast"] }])
    expect(textOf(await called(grouped.token, "toolbox__search", { q: "where" }))).toBe("beta:where")
    const before = http.calls.length
    const forecast = await called(grouped.token, "toolbox__forecast", { city: "Oslo" })
    expect(JSON.parse(textOf(forecast))).toEqual({ method: "GET", path: "/forecast/Oslo" })
    // Once per path, each through the HTTP endpoint's tool.
    expect(http.calls.slice(before)).toEqual([
      { endpoint: "weather", tool: "forecast", url: `http://127.0.0.1:${service.port}/forecast/Oslo` },
      { endpoint: "weather", tool: "forecast", url: `http://127.0.0.1:${service.port}/forecast/Oslo` }
    ])
    // Not named by the group's entry: refused like an unknown tool.
    const echo = await called(grouped.token, "toolbox__echo", { message: "hi" })
    expect(echo["error"]).toMatchObject({ code: -32602, message: "Unknown tool: toolbox__echo" })
  })

  it("a member that is a write tool stays one: the group's entry must allow write requests", async () => {
    const reader = await person([{ endpoint_id: "toolbox", tools: ["*"] }])
    const refused = await called(reader.token, "toolbox__write_note", { text: "n" })
    expect(refused["error"]).toMatchObject({ code: -32602, message: "Unknown tool: toolbox__write_note" })
    const writer = await person([{ endpoint_id: "toolbox", tools: ["*"], allow_write_requests: true }])
    expect((await listed(writer.token)).map((tool) => tool.name)).toContain("toolbox__write_note")
    expect(textOf(await called(writer.token, "toolbox__write_note", { text: "n" }))).toBe("saved n")
  })

  it("a group rule makes a read member a write tool needing approval; nothing reaches the backend", async () => {
    const reader = await person([{ endpoint_id: "strict", tools: ["echo"] }])
    expect(await listed(reader.token)).toEqual([])
    const writer = await person([{ endpoint_id: "strict", tools: ["echo"], allow_write_requests: true }])
    const requests = beta.requests.length
    for (const answer of await pendingOnBothPaths(writer.token, "strict__echo", { message: "hold" })) {
      expect(answer).toMatchObject({ state: "pending", required_approvals: 1 })
    }
    expect(beta.requests.slice(requests).some((request) => request.body.includes('"hold"'))).toBe(false)
  })

  it("a member's approval rule holds through the group: approved, resumed once, executed on the member's backend", async () => {
    const deployer = await person([{ endpoint_id: "deployers", tools: ["*"], allow_write_requests: true }])
    const names = (await listed(deployer.token)).map((tool) => tool.name)
    expect(names).toEqual([
      "deployers__deploy",
      "deployers__deploy_status",
      "gateway_approval_status",
      "gateway_resume_approval"
    ])
    const operation = `op-group-${Date.now()}`
    const [direct, sdk] = await pendingOnBothPaths(deployer.token, "deployers__deploy", {
      operation_id: operation,
      environment: "staging",
      version: "7"
    })
    // The second path finds the first's approval by its operation id.
    expect(direct).toMatchObject({ state: "pending" })
    expect(sdk).toMatchObject({ state: "pending", approval_id: direct?.["approval_id"] })
    expect(ops.executions.get(operation)).toBeUndefined()
    const reviewer = await person([], ["approver"])
    const approvalId = approvalIdOf({ structuredContent: direct! })
    expect(
      (await review(gateway, (await browserOf(gateway, reviewer.userId)).cookie, approvalId, "approve")).status
    ).toBe(303)
    const done = await resume(gateway, deployer.token, approvalId)
    expect(done.structuredContent).toEqual({ deployed: "7", environment: "staging" })
    expect(ops.executions.get(operation)).toBe(1)
  })

  it("an original name two members contribute is exposed by neither; the group's other tools are", async () => {
    const user = await person([{ endpoint_id: "clash", tools: ["*"] }])
    expect((await listed(user.token)).map((tool) => tool.name)).toEqual(["clash__echo"])
    const refused = await called(user.token, "clash__search", { q: "x" })
    expect(refused["error"]).toMatchObject({ code: -32602, message: "Unknown tool: clash__search" })
  })
})

describe("HTTP tools", () => {
  it("are listed with name, title, description and input schema under <id>__<name>, as their tool_rules publish", async () => {
    const user = await person([
      { endpoint_id: "weather", tools: ["*"] },
      { endpoint_id: "crm", tools: ["*"] }
    ])
    const tools = await listed(user.token)
    expect(tools.map((tool) => tool.name)).toEqual(["crm__get_contact", "weather__forecast", "weather__slow_forecast"])
    expect(tools[1]).toEqual({
      name: "weather__forecast",
      title: "Forecast",
      description: "The weather in a city",
      inputSchema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
    })
  })

  it("are called through the HttpTools service and answer its result; a write tool needs allow_write_requests", async () => {
    const user = await person([
      { endpoint_id: "weather", tools: ["forecast"] },
      { endpoint_id: "crm", tools: ["*"], allow_write_requests: true }
    ])
    const forecast = await called(user.token, "weather__forecast", { city: "Zürich/../admin" })
    expect(JSON.parse(textOf(forecast))).toEqual({ method: "GET", path: "/forecast/Z%C3%BCrich%2F..%2Fadmin" })
    expect(forecast["result"]).toMatchObject({ structuredContent: { method: "GET" } })
    expect(forecast["result"]).not.toHaveProperty("isError", true)
    const deleted = await called(user.token, "crm__delete_contact", { id: "42" })
    expect(JSON.parse(textOf(deleted))).toEqual({ method: "DELETE", path: "/contacts/42" })
    const reader = await person([{ endpoint_id: "crm", tools: ["*"] }])
    const refused = await called(reader.token, "crm__delete_contact", { id: "42" })
    expect(refused["error"]).toMatchObject({ code: -32602, message: "Unknown tool: crm__delete_contact" })
  })

  it("a write HTTP tool with an approval rule asks for approval; resumed once, the request is sent", async () => {
    const payer = await person([{ endpoint_id: "payments", tools: ["refund"], allow_write_requests: true }])
    const names = (await listed(payer.token)).map((tool) => tool.name)
    expect(names).toEqual(["gateway_approval_status", "gateway_resume_approval", "payments__refund"])
    const operation = `refund-${Date.now()}`
    const before = http.calls.length
    const [direct, sdk] = await pendingOnBothPaths(payer.token, "payments__refund", { operation_id: operation })
    expect(direct).toMatchObject({ state: "pending" })
    expect(sdk).toMatchObject({ state: "pending", approval_id: direct?.["approval_id"] })
    expect(http.calls.length).toBe(before)
    const reviewer = await person([], ["approver"])
    const approvalId = approvalIdOf({ structuredContent: direct! })
    const browser = await browserOf(gateway, reviewer.userId)
    expect((await review(gateway, browser.cookie, approvalId, "approve")).status).toBe(303)
    const done = await resume(gateway, payer.token, approvalId)
    expect(done.structuredContent).toEqual({ method: "POST", path: `/refunds/${operation}` })
    expect(http.calls.slice(before)).toEqual([
      { endpoint: "payments", tool: "refund", url: `http://127.0.0.1:${service.port}/refunds/${operation}` }
    ])
    const again = await resume(gateway, payer.token, approvalId)
    expect(again.structuredContent).toMatchObject({ error: "approval_not_approved" })
    expect(http.calls.length).toBe(before + 1)
  })

  it("a call whose permission is removed while it runs is cancelled: access withdrawn", async () => {
    const { userId, groupId } = await gateway.run(
      grantAccess([{ endpoint_id: "weather", tools: ["forecast", "slow_forecast"] }])
    )
    const token = await gateway.token({ subject: userId })
    const client = await connectClient(gateway.mcpUrl, token)
    try {
      const before = http.calls.length
      const running = client
        .callTool({ name: "weather__slow_forecast", arguments: { city: "Oslo" } })
        .catch((error: Error) => error)
      await expect.poll(() => http.calls.length, { timeout: 5_000 }).toBeGreaterThan(before)
      const started = Date.now()
      await gateway.run(
        Effect.gen(function* () {
          const row = yield* (yield* GroupRepo).find(groupId)
          yield* (yield* PolicyWrites).updateGroup(testActor, groupId, row!.revision, {
            permissions: Schema.decodeUnknownSync(Permissions)({
              access: [{ endpoint_id: "weather", tools: ["forecast"] }]
            })
          })
        })
      )
      expect(await running).toMatchObject({ message: expect.stringContaining("access to it was withdrawn") })
      expect(Date.now() - started).toBeLessThan(5_000)
    } finally {
      await client.close()
    }
  })

  it("are refused by the policy like an unknown tool when not granted, and nothing is sent", async () => {
    const other = await person([{ endpoint_id: "alpha", tools: ["*"] }])
    const before = http.calls.length
    const refused = await called(other.token, "weather__forecast", { city: "Oslo" })
    expect(refused["error"]).toMatchObject({ code: -32602, message: "Unknown tool: weather__forecast" })
    expect(http.calls.length).toBe(before)
  })

  it("answer invalid arguments with JSON-RPC -32602 and the reason", async () => {
    const user = await person([{ endpoint_id: "weather", tools: ["forecast"] }])
    const answer = await called(user.token, "weather__forecast", {})
    expect(answer["error"]).toEqual({ code: -32602, message: "argument /city: is required" })
  })

  it("a name an HTTP endpoint and a backend both expose is exposed by neither", async () => {
    const user = await person([
      { endpoint_id: "beta", tools: ["*"] },
      { endpoint_id: "shadow", tools: ["*"] }
    ])
    expect((await listed(user.token)).map((tool) => tool.name)).toEqual(["beta__echo"])
    const refused = await called(user.token, "beta__search", { q: "x" })
    expect(refused["error"]).toMatchObject({ code: -32602, message: "Unknown tool: beta__search" })
  })
})

describe("managed endpoints' required scopes", () => {
  it("are in the resource metadata's and the authorization server's scopes_supported", async () => {
    const resource = (await (await fetch(`${gateway.baseUrl}/.well-known/oauth-protected-resource/mcp`)).json()) as {
      scopes_supported: Array<string>
    }
    expect(resource.scopes_supported).toEqual(["locked:use", "vault:read"])
    const server = (await (await fetch(`${gateway.baseUrl}/.well-known/oauth-authorization-server/sso`)).json()) as {
      scopes_supported: Array<string>
    }
    expect(server.scopes_supported).toEqual(expect.arrayContaining(["locked:use", "vault:read"]))
  })

  it("open an HTTP endpoint or a tool group only to a token carrying them, as for a backend", async () => {
    const { userId } = await gateway.run(
      grantAccess(
        [
          { endpoint_id: "vault", tools: ["open"] },
          { endpoint_id: "locked", tools: ["echo"] },
          { endpoint_id: "beta", tools: ["echo"] }
        ],
        { scopes: ["vault:read", "locked:use"] }
      )
    )
    const without = await gateway.token({ subject: userId })
    expect((await listed(without)).map((tool) => tool.name)).toEqual(["beta__echo"])
    const refused = await called(without, "vault__open", {})
    expect(refused["error"]).toMatchObject({ code: -32602, message: "Unknown tool: vault__open" })
    const scoped = await gateway.token({ subject: userId, scopes: ["vault:read", "locked:use"] })
    expect((await listed(scoped)).map((tool) => tool.name)).toEqual(["beta__echo", "locked__echo", "vault__open"])
    expect(JSON.parse(textOf(await called(scoped, "vault__open", {})))).toEqual({ method: "GET", path: "/vault" })
  })
})

describe("a generation given no HttpTools override", () => {
  it("sends an HTTP tool's call with the live client (src/sources/http/live.ts)", async () => {
    const origin = `http://127.0.0.1:${service.port}`
    const bare = await startTestGateway({
      policy: "store",
      sources: {
        ...noManagedSources,
        http: [
          httpEndpoint("http_tool", { id: "weather", allow_insecure_http: true, tool_rules: [{ tools: ["*"] }] }, [
            cityTool(origin)
          ])
        ]
      }
    })
    try {
      const { userId } = await bare.run(grantAccess([{ endpoint_id: "weather", tools: ["*"] }]))
      const token = await bare.token({ subject: userId })
      const answer = await jsonRpcOf(
        await rawPost(
          bare.mcpUrl,
          JSON.stringify({
            jsonrpc: "2.0",
            id: 1,
            method: "tools/call",
            params: { name: "weather__forecast", arguments: { city: "Oslo" } }
          }),
          { "mcp-protocol-version": "2025-11-25", authorization: `Bearer ${token}` }
        )
      )
      expect(answer["result"]).toMatchObject({ structuredContent: { method: "GET", path: "/forecast/Oslo" } })
    } finally {
      await bare.close()
    }
  })
})
