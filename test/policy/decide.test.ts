/**
 * docs/access-policy.md ("The permission object", "Rules"). The PolicyEngine's view and call decision, table
 * driven: token scopes × held scopes × publication × write flag × resource rules × membership source
 * (direct, mapped organization group, unverified) × staleness × user and directory state. The engine is
 * the real one; only the stored policy is given as rows (the store's own tests load them for real).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Layer, Schema, TestClock } from "effect"
import { stringify } from "yaml"
import type { Caller } from "../../src/bearer/caller.js"
import { parseConfig } from "../../src/config/load.js"
import { Config } from "../../src/config/service.js"
import { buildIndex } from "../../src/mcp/catalog/index.js"
import { AccessState } from "../../src/policy/access-state.js"
import { PolicyEngine, PolicyEngineLive } from "../../src/policy/engine.js"
import { buildGrant, indexGroups } from "../../src/policy/grant.js"
import { Permissions } from "../../src/policy/permissions.js"
import { roleScopesOf } from "../../src/policy/roles.js"
import { GatewayToolRules } from "../../src/policy/tool.js"
import type { GroupRow } from "../../src/store/groups.js"
import type { MembershipRow, MembershipSource } from "../../src/store/memberships.js"
import type { UserId, UserRow } from "../../src/store/users.js"

/** No gateway-provided tools: what is measured here is the backends' tools. */
const GatewayToolsLive = Layer.succeed(GatewayToolRules, [])

const day = 86_400_000

const { config, ...loaded } = Either.getOrThrow(
  parseConfig(
    "gateway.yaml",
    stringify({
      server: { listen: "127.0.0.1:8080", public_url: "https://gw.example.com/mcp" },
      auth: { issuer: "https://gw.example.com/sso" },
      backends: [
        {
          id: "crm",
          url: "https://crm.example.com/mcp",
          required_scopes: ["crm:read"],
          tool_rules: [
            { tools: ["search"] },
            { tools: ["internal"], publish: false },
            { tools: ["update"], write: true },
            { tools: ["close"], write: true, approval: { required_approvals: 1 } }
          ]
        },
        { id: "wiki", url: "https://wiki.example.com/mcp", tool_rules: [{ tools: ["read_page"] }] }
      ]
    }),
    {}
  )
)

const tools = (names: ReadonlyArray<string>) =>
  names.map((name) => ({ name, inputSchema: { type: "object" as const } }))
const catalog = (names: ReadonlyArray<string>) => ({
  tools: tools(names),
  prompts: [],
  resources: [],
  templates: [],
  completions: false
})
const index = buildIndex([
  { config: config.backends[0]!, catalog: catalog(["search", "update", "close", "internal"]) },
  { config: config.backends[1]!, catalog: catalog(["read_page"]) }
])

const row = (id: string, kind: GroupRow["kind"], permissions: unknown): GroupRow => ({
  id,
  name: id,
  provider: kind === "permission" ? "gateway:permissions" : "oidc:test",
  kind,
  external_id: kind === "permission" ? null : id,
  managed_locally: kind === "permission",
  builtin: null,
  enabled: true,
  permissions: permissions === null ? null : Schema.decodeUnknownSync(Permissions)(permissions),
  source_groups: kind === "permission" ? ["org-sales"] : [],
  revision: 1,
  created_at: new Date(0),
  updated_at: new Date(0)
})

interface Case {
  readonly name: string
  readonly token?: ReadonlyArray<string>
  readonly groupScopes?: ReadonlyArray<string>
  readonly allowWrite?: boolean
  readonly membership?: "direct" | "mapped" | "mapped-unverified"
  readonly kind?: UserRow["kind"]
  readonly status?: UserRow["status"]
  readonly directoryActive?: boolean
  readonly verifiedDaysAgo?: number
  readonly tool: string
  readonly args?: Record<string, unknown>
  readonly expect: string
}

const grantFor = (test: Case) => {
  const permission = row("sales", "permission", {
    scopes: test.groupScopes ?? ["crm:read"],
    access: [
      {
        endpoint_id: "crm",
        tools: ["search", "update", "close", "internal"],
        allow_write_requests: test.allowWrite ?? true,
        resource_rules: [{ argument: "/account/region", allowed_values: ["emea", "apac"] }]
      },
      { endpoint_id: "crm", tools: ["search"] },
      { endpoint_id: "wiki", tools: ["read_page"] }
    ]
  })
  const organization = row("org-sales", "group", null)
  const membership = test.membership ?? "direct"
  const source: MembershipSource = membership === "direct" ? "direct" : "claims"
  const user: UserRow = {
    id: "u1" as UserId,
    kind: test.kind ?? (membership === "direct" ? "local" : "enterprise"),
    username: "u1",
    display_name: "U",
    status: test.status ?? "enabled",
    revision: 1,
    directory_active: test.directoryActive ?? true,
    membership_verified_at:
      membership === "mapped-unverified" ? null : new Date(1000 * day - (test.verifiedDaysAgo ?? 0) * day),
    namespace: null,
    external_subject: null,
    created_at: new Date(0),
    updated_at: new Date(0)
  }
  const memberships: ReadonlyArray<MembershipRow> = [
    { user_id: "u1", group_id: source === "direct" ? "sales" : "org-sales", source, created_at: new Date(0) }
  ]
  return buildGrant(user, memberships, indexGroups([permission, organization]), {
    roleScopes: roleScopesOf(config),
    membershipMaxAgeMs: day
  })
}

const outcomeOf = (test: Case) =>
  Effect.gen(function* () {
    const grant = grantFor(test)
    const state = Layer.succeed(AccessState, {
      grantFor: () => Effect.succeed(grant),
      grantOfUser: () => Effect.succeed(grant),
      groups: Effect.succeed(indexGroups([])),
      epoch: () => 0,
      changed: () => Effect.void,
      onChange: () => () => {},
      settings: {
        roleScopes: new Map(),
        membershipMaxAgeMs: day,
        externalNamespace: undefined,
        bootstrapSubjects: new Set<string>()
      }
    })
    const engine = yield* Effect.provide(
      PolicyEngine,
      PolicyEngineLive.pipe(
        Layer.provide(Layer.mergeAll(state, GatewayToolsLive, Layer.succeed(Config, { config, ...loaded })))
      )
    )
    yield* TestClock.setTime(1000 * day)
    const caller: Caller = {
      issuer: "https://gw.example.com/sso",
      subject: "u1",
      scopes: new Set(test.token ?? ["crm:read"]),
      clientId: "cli",
      sessionId: "s",
      tokenId: undefined,
      expiresAt: Number.MAX_SAFE_INTEGER
    }
    const view = yield* Effect.either(engine.view(caller))
    if (Either.isLeft(view)) return `refuse:${view.left.status}`
    const tool = index.toolByName.get(test.tool)
    if (tool === undefined) return "unknown"
    const decision = engine.decide(view.right, tool, test.args)
    const listed = view.right.seesTool(tool) ? "listed" : "hidden"
    return decision._tag === "Deny" ? `deny:${decision.reason}:${listed}` : `${decision._tag.toLowerCase()}:${listed}`
  })

const emea = { account: { region: "emea" } }

const cases: ReadonlyArray<Case> = [
  { name: "a read tool, direct group, scopes held and in the token", tool: "crm__search", expect: "allow:listed" },
  {
    name: "an entry without rules allows any arguments",
    tool: "crm__search",
    args: { anything: 1 },
    expect: "allow:listed"
  },
  {
    name: "a write tool with allow_write_requests and matching rule",
    tool: "crm__update",
    args: emea,
    expect: "allow:listed"
  },
  {
    name: "a write tool, rule argument not allowed",
    tool: "crm__update",
    args: { account: { region: "us" } },
    expect: "deny:resource_rule:listed"
  },
  { name: "a write tool, rule argument missing", tool: "crm__update", args: {}, expect: "deny:resource_rule:listed" },
  {
    name: "a write tool, rule argument not a string",
    tool: "crm__update",
    args: { account: { region: 7 } },
    expect: "deny:resource_rule:listed"
  },
  {
    name: "a write tool without allow_write_requests is hidden and denied",
    allowWrite: false,
    tool: "crm__update",
    args: emea,
    expect: "deny:not_visible:hidden"
  },
  { name: "a write tool whose rule asks for approval", tool: "crm__close", args: emea, expect: "needsapproval:listed" },
  {
    name: "allow_write_requests never bypasses approval",
    tool: "crm__close",
    args: emea,
    allowWrite: true,
    expect: "needsapproval:listed"
  },
  { name: "an unpublished tool is unknown", tool: "crm__internal", expect: "unknown" },
  {
    name: "token lacks the backend scope: the only other backend still opens",
    token: [],
    tool: "crm__search",
    expect: "deny:not_visible:hidden"
  },
  {
    name: "token has the scope the user no longer holds",
    groupScopes: [],
    tool: "crm__search",
    expect: "deny:not_visible:hidden"
  },
  {
    name: "a backend without required scopes opens for any token",
    token: [],
    tool: "wiki__read_page",
    expect: "allow:listed"
  },
  { name: "mapped organization group, verified", membership: "mapped", tool: "crm__search", expect: "allow:listed" },
  {
    name: "mapped organization group, never verified, counts for nothing",
    membership: "mapped-unverified",
    tool: "wiki__read_page",
    expect: "deny:not_visible:hidden"
  },
  {
    name: "mapped, verified half a day ago (max age one day)",
    membership: "mapped",
    verifiedDaysAgo: 0.5,
    tool: "crm__search",
    expect: "allow:listed"
  },
  {
    name: "enterprise membership older than the max age: 401 for the whole request",
    membership: "mapped",
    verifiedDaysAgo: 2,
    tool: "crm__search",
    expect: "refuse:401"
  },
  { name: "a disabled user: 401", status: "disabled", tool: "crm__search", expect: "refuse:401" },
  { name: "a pending user: 401", status: "pending", tool: "crm__search", expect: "refuse:401" },
  {
    name: "inactive in the directory: 401, local groups cannot keep them",
    directoryActive: false,
    tool: "crm__search",
    expect: "refuse:401"
  }
]

describe("the call decision", () => {
  for (const test of cases) {
    it.effect(test.name, () => Effect.map(outcomeOf(test), (outcome) => expect(outcome).toBe(test.expect)))
  }
})
