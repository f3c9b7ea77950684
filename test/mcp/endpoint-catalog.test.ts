/**
 * The catalog index over endpoints (src/mcp/catalog/index.ts) as the policy's explanation, the
 * approvals' configuration hash and the approval tools' visibility read it: backends keep their slots,
 * HTTP endpoints and tool groups follow in that order, and a tool group's tool is decided on the group.
 * Pure functions over real index builds; the grant is the permissive test double
 * (test/support/permit-policy.ts), the policy's own rules being tested in test/policy/.
 */
import { Redacted, Schema } from "effect"
import { describe, expect, it } from "vitest"
import { canonicalJson } from "../../src/approvals/intent.js"
import { type ApprovalSource, sourceHashOf } from "../../src/approvals/source.js"
import { Backend, type BackendConfig } from "../../src/config/schema.js"
import type { LoadedConfig } from "../../src/config/service.js"
import { sha256Hex } from "../../src/crypto/hashing.js"
import { endpointsWithApprovals } from "../../src/mcp/calls/approval-tools.js"
import { buildIndex, type ExposedTool } from "../../src/mcp/catalog/index.js"
import { explainAccess } from "../../src/policy/explain.js"
import { endpointsOf } from "../../src/policy/tool.js"
import { type HttpEndpoint, HttpTool, ToolGroup } from "../../src/sources/schema.js"
import { permitGrant } from "../support/permit-policy.js"

const backend = (input: Record<string, unknown>): BackendConfig =>
  Schema.decodeUnknownSync(Backend)({ url: "https://backend.example.com/mcp", ...input })

const httpEndpoint = (input: Record<string, unknown>, tool: Record<string, unknown>): HttpEndpoint => {
  const { tool: spec, ...endpoint } = Schema.decodeUnknownSync(HttpTool)({ ...input, tool })
  return { kind: "http_tool", ...endpoint, credentials: endpoint.credentials, tools: [spec] }
}

const catalogOf = (names: ReadonlyArray<string>) => ({
  tools: names.map((name) => ({ name, inputSchema: { type: "object" as const } })),
  prompts: [],
  resources: [],
  templates: [],
  completions: false
})

const alpha = backend({ id: "alpha", tool_rules: [{ tools: ["search"] }, { tools: ["write_note"], write: true }] })
const weather = httpEndpoint(
  { id: "weather", required_scopes: ["weather:read"], tool_rules: [{ tools: ["*"] }] },
  { name: "forecast", method: "GET", url: "https://weather.example.com/forecast/{city}" }
)
const toolbox = Schema.decodeUnknownSync(ToolGroup)({
  id: "toolbox",
  members: [
    { endpoint: "alpha", tool: "*" },
    { endpoint: "weather", tool: "forecast" }
  ],
  tool_rules: [{ tools: ["*"] }, { tools: ["forecast"], write: true, approval: { required_approvals: 2 } }]
})
const managed = { http: [weather], toolGroups: [toolbox] }
const index = buildIndex([{ config: alpha, catalog: catalogOf(["search", "write_note", "hidden"]) }], [], managed)
const tool = (name: string) => index.toolByName.get(name) as ExposedTool

describe("the catalog index over endpoints", () => {
  it("orders endpoints backends first (their slots), then HTTP endpoints, then tool groups", () => {
    expect(index.endpoints).toEqual([
      { id: "alpha", kind: "backend", required_scopes: [] },
      { id: "weather", kind: "http_tool", required_scopes: ["weather:read"] },
      { id: "toolbox", kind: "tool_group", required_scopes: [] }
    ])
    expect(endpointsOf({ config: { backends: [alpha] }, sources: managed })).toEqual(index.endpoints)
    expect(tool("alpha__search")).toMatchObject({
      endpoint: 0,
      target: { _tag: "Backend", slot: 0, original: "search" }
    })
    expect(tool("weather__forecast")).toMatchObject({ endpoint: 1, target: { _tag: "Http", endpoint: weather } })
    // A group's tool: decided on the group (2), run on the member's target.
    expect(tool("toolbox__search")).toMatchObject({
      endpoint: 2,
      original: "search",
      member: { endpoint: "alpha", tool: "search" },
      target: { _tag: "Backend", slot: 0, original: "search" }
    })
    expect(tool("toolbox__forecast")).toMatchObject({ endpoint: 2, target: { _tag: "Http", spec: weather.tools[0] } })
    // `*` names only what alpha publishes.
    expect(index.toolByName.has("toolbox__hidden")).toBe(false)
  })

  it("a group tool's write flag is the member's OR the rule's; its approval the rule's, else the member's", () => {
    expect(tool("toolbox__write_note")).toMatchObject({ write: true, approval: undefined })
    expect(tool("toolbox__search")).toMatchObject({ write: false, approval: undefined })
    expect(tool("toolbox__forecast")).toMatchObject({ write: true, approval: { required_approvals: 2 } })
  })
})

describe("effective access over endpoints", () => {
  const caller = {
    issuer: "test",
    subject: "u1",
    scopes: new Set<string>(),
    clientId: undefined,
    sessionId: undefined,
    tokenId: undefined,
    expiresAt: Number.MAX_SAFE_INTEGER
  }

  it("lists HTTP tools and tool-group tools, naming the endpoint that decides and the member a group's tool runs", () => {
    const explained = explainAccess(permitGrant(caller), index.endpoints, index.tools, 0)
    const byName = new Map(explained.tools.map((entry) => [entry.name, entry]))
    expect([...byName.keys()]).toEqual([
      "alpha__search",
      "alpha__write_note",
      "toolbox__forecast",
      "toolbox__search",
      "toolbox__write_note",
      "weather__forecast"
    ])
    expect(byName.get("toolbox__forecast")).toMatchObject({
      backend: "toolbox",
      endpoint_kind: "tool_group",
      member: { endpoint: "weather", tool: "forecast" },
      tool: "forecast",
      write: true,
      decision: "allow",
      approval_required: true,
      decided_by: [{ group_id: "permit-all" }]
    })
    // The HTTP endpoint's own scope is not held: denied there, while the group (no scope) allows.
    expect(byName.get("weather__forecast")).toMatchObject({
      backend: "weather",
      endpoint_kind: "http_tool",
      decision: "deny",
      reason: "scope_not_held"
    })
    expect(byName.get("weather__forecast")).not.toHaveProperty("member")
    expect(byName.get("alpha__search")).toMatchObject({ backend: "alpha", endpoint_kind: "backend" })
  })
})

describe("the configuration an approval is bound to", () => {
  const tool = { original: "deploy", write: true, approval: { required_approvals: 1 } as never }

  it("a backend's hash is what it was before endpoints (stored approvals keep their hash)", () => {
    const ops = backend({
      id: "ops",
      headers: { "x-team": "a" },
      credentials: { type: "basic", username: "svc", password: "hunter2" }
    })
    const legacy = sha256Hex(
      canonicalJson({
        backend: "ops",
        url: ops.url,
        allow_insecure_http: false,
        naming: ops.naming,
        headers: ["x-team"],
        credentials: { type: "basic", username: "svc" },
        oauth: null,
        required_scopes: [],
        tool: "deploy",
        write: true,
        approval: { required_approvals: 1 }
      })
    )
    expect(sourceHashOf({ kind: "backend", backend: ops }, tool)).toBe(legacy)
  })

  it("an HTTP endpoint's hash covers its identity and the tool's request, never a secret's value", () => {
    const base = httpEndpoint(
      { id: "crm", headers: { "x-api-key": "one" }, credentials: { type: "bearer", token: "t1" } },
      { name: "deploy", method: "POST", url: "https://crm.example.com/deploy" }
    )
    const hash = (endpoint: HttpEndpoint) =>
      sourceHashOf({ kind: "http", endpoint, spec: endpoint.tools[0]! } satisfies ApprovalSource, tool)
    const secretsChanged: HttpEndpoint = {
      ...base,
      headers: { "x-api-key": Redacted.make("two") },
      credentials: { type: "bearer", token: Redacted.make("t2") }
    }
    expect(hash(secretsChanged)).toBe(hash(base))
    const moved: HttpEndpoint = { ...base, tools: [{ ...base.tools[0]!, url: "https://crm.example.com/other" }] }
    expect(hash(moved)).not.toBe(hash(base))
    expect(hash({ ...base, tools: [{ ...base.tools[0]!, method: "PUT" }] })).not.toBe(hash(base))
    expect(hash({ ...base, credentials: undefined })).not.toBe(hash(base))
    expect(hash({ ...base, kind: "openapi_import" })).not.toBe(hash(base))
  })

  it("a tool group's hash covers its members and the member's endpoint", () => {
    const member = { kind: "backend", backend: backend({ id: "ops" }) } as const
    const hash = (group: ToolGroup, of: typeof member = member) =>
      sourceHashOf({ kind: "tool_group", group, member: of, memberTool: "deploy" }, tool)
    const group = Schema.decodeUnknownSync(ToolGroup)({
      id: "deployers",
      members: [{ endpoint: "ops", tool: "deploy" }]
    })
    expect(hash(group)).not.toBe(hash({ ...group, members: [...group.members, { endpoint: "ops", tool: "x" }] }))
    expect(hash(group)).not.toBe(
      hash(group, { kind: "backend", backend: backend({ id: "ops", url: "https://b.example.com/" }) })
    )
    expect(hash(group)).not.toBe(sourceHashOf(member, tool))
  })
})

describe("the approval tools' visibility", () => {
  it("covers HTTP endpoints with approval rules and tool groups whose rules or members have them", () => {
    const ops = backend({
      id: "ops",
      tool_rules: [{ tools: ["deploy"], write: true, approval: { required_approvals: 1 } }]
    })
    const group = (id: string, endpoint: string) =>
      Schema.decodeUnknownSync(ToolGroup)({ id, members: [{ endpoint, tool: "*" }] })
    const loaded = {
      config: { backends: [alpha, ops] },
      sources: {
        managed: true,
        http: [
          weather,
          httpEndpoint(
            { id: "crm", tool_rules: [{ tools: ["*"], write: true, approval: { required_approvals: 1 } }] },
            { name: "drop", method: "DELETE", url: "https://crm.example.com/x" }
          )
        ],
        toolGroups: [group("plain", "alpha"), group("via_ops", "ops"), toolbox]
      }
    } as unknown as LoadedConfig
    // ops (1), crm (3), the group over ops (5), and toolbox, whose own rule asks for approval (6).
    expect(endpointsWithApprovals(loaded)).toEqual([1, 3, 5, 6])
  })
})
