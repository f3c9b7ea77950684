/**
 * Explainable access (docs/access-policy.md, "Effective access" and "Rules": groups and their
 * provenance, verified_at, membership_stale; only the built-in administrator maps organization
 * groups). Organization groups arrive as upstream
 * memberships (what sign-in and directory snapshots write); an administrator maps them.
 */
import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Schema, TestClock } from "effect"
import { PolicyWrites } from "../../src/policy/writes.js"
import { HttpTool, ToolGroup } from "../../src/sources/schema.js"
import { GroupRepo } from "../../src/store/groups.js"
import { UserRepo } from "../../src/store/users.js"
import { addLocalUser, adminToken, ifMatch, managementApi, signInForAdminToken } from "../support/admin-api.js"
import { grantAccess, grantAccessTo } from "../support/grants.js"
import { alphaTools, startBackend } from "../support/mcp-backends.js"
import { inGateway, oauthGateway } from "../support/oauth-gateway.js"

const gatewayWithAlpha = Effect.gen(function* () {
  const alpha = yield* Effect.acquireRelease(
    Effect.promise(() => startBackend("alpha", alphaTools)),
    (backend) => Effect.promise(() => backend.stop())
  )
  return yield* oauthGateway({
    patch: {
      backends: [
        {
          id: "alpha",
          url: alpha.url,
          allow_insecure_http: true,
          tool_rules: [{ tools: ["echo", "search", "slow"] }, { tools: ["write_note"], write: true }]
        }
      ]
    }
  })
})

/** An enterprise user whose upstream (sign-in claims) put them in organization group `sales`. */
const enterpriseSalesperson = Effect.gen(function* () {
  const at = new Date(yield* Clock.currentTimeMillis)
  const [sales] = yield* (yield* GroupRepo).upsertOrganizationGroups(
    "oidc:test",
    "group",
    [{ externalId: "sales", name: "Sales" }],
    at
  )
  const userId = yield* (yield* UserRepo).insertEnterprise({
    namespace: "oidc:test",
    externalSubject: "sub-1",
    displayName: "Sam",
    at
  })
  yield* (yield* PolicyWrites).setUpstreamMemberships(userId, "claims", [sales!], at)
  return { userId, sales: sales! }
})

describe("effective access", () => {
  it.scopedLive(
    "names per tool the deciding group and how it reaches the user: a direct membership or a mapped organization group",
    () =>
      Effect.gen(function* () {
        const gateway = yield* gatewayWithAlpha
        const api = managementApi(gateway, yield* adminToken(gateway, {}, Date.now()))
        const { userId, sales } = yield* inGateway(gateway)(enterpriseSalesperson)
        // A permission group the organization group is mapped onto (built-in administrator only).
        const mapped = yield* api.post("/api/v1/identities/groups", {
          name: "Sales tools",
          permissions: {
            access: [{ endpoint_id: "alpha", tools: ["echo", "write_note"], allow_write_requests: true }]
          },
          source_groups: [sales]
        })
        expect(mapped).toMatchObject({ status: 201, body: { source_groups: [sales] } })
        const direct = yield* inGateway(gateway)(grantAccessTo(userId, [{ endpoint_id: "alpha", tools: ["search"] }]))

        const explained = yield* api.get(`/api/v1/identities/${userId}/effective-access`)
        expect(explained.status).toBe(200)
        expect(explained.body).toMatchObject({ user_id: userId, active: false, membership_stale: false })
        // Pending users get nothing; enable, then read again.
        const user = (yield* api.get("/api/v1/identities")).body["users"] as Array<Record<string, unknown>>
        const record = user.find((each) => each["id"] === userId)!
        expect(record["groups"]).toHaveLength(2)
        expect(record["groups"]).toEqual(
          expect.arrayContaining([
            { id: sales, name: "Sales", source: "claims" },
            { id: direct, name: expect.any(String), source: "direct" }
          ])
        )
        expect((yield* api.put(`/api/v1/identities/${userId}`, { enabled: true }, ifMatch(record))).status).toBe(200)
        const enabled = (yield* api.get(`/api/v1/identities/${userId}/effective-access`)).body
        expect(enabled).toMatchObject({ active: true, verified_at: expect.any(String), membership_stale: false })
        const tools = new Map((enabled["tools"] as Array<Record<string, unknown>>).map((tool) => [tool["name"], tool]))
        expect(tools.get("alpha__echo")).toMatchObject({
          decision: "allow",
          decided_by: [{ group_name: "Sales tools", via: "mapped", source_group_id: sales, source_group_name: "Sales" }]
        })
        expect(tools.get("alpha__write_note")).toMatchObject({ decision: "allow", write: true })
        expect(tools.get("alpha__search")).toMatchObject({
          decision: "allow",
          decided_by: [{ group_id: direct, via: "direct" }]
        })
        expect(tools.get("alpha__slow")).toMatchObject({ decision: "deny", reason: "no_access_entry", decided_by: [] })
      })
  )

  it.scopedLive(
    'an entry with tools ["*"] covers every published tool: effective access lists each and says it came from "*"',
    () =>
      Effect.gen(function* () {
        const gateway = yield* gatewayWithAlpha
        const api = managementApi(gateway, yield* adminToken(gateway, {}, Date.now()))
        const alice = yield* addLocalUser(gateway, "alice", "alice's long passphrase")
        yield* inGateway(gateway)(
          grantAccessTo(alice, [
            { endpoint_id: "alpha", tools: ["*"] },
            { endpoint_id: "alpha", tools: ["echo"] }
          ])
        )
        const explained = (yield* api.get(`/api/v1/identities/${alice}/effective-access`)).body
        const tools = new Map(
          (explained["tools"] as Array<Record<string, unknown>>).map((tool) => [tool["name"], tool])
        )
        expect(tools.get("alpha__search")).toMatchObject({ decision: "allow", matched_by: ["*"] })
        expect(tools.get("alpha__slow")).toMatchObject({ decision: "allow", matched_by: ["*"] })
        // Named too: both ways are told.
        expect(tools.get("alpha__echo")).toMatchObject({ decision: "allow", matched_by: ["*", "name"] })
        // A write tool still needs allow_write_requests.
        expect(tools.get("alpha__write_note")).toMatchObject({
          decision: "deny",
          reason: "write_not_allowed",
          matched_by: []
        })
      })
  )

  it.scoped(
    '"*" stands alone: a list mixing it with names, or a name holding "*", is refused with 400 and nothing written',
    () =>
      Effect.gen(function* () {
        const gateway = yield* oauthGateway()
        const api = managementApi(gateway, yield* adminToken(gateway))
        const before = ((yield* api.get("/api/v1/identities")).body["groups"] as Array<unknown>).length
        const cases = [
          [
            ["*", "echo"],
            'permissions.access[0].tools: "*" grants every tool of the backend and must be the only item'
          ],
          [
            ["echo", "read_*"],
            'permissions.access[0].tools[1]: "read_*": names are exact; only "*" alone is a wildcard'
          ]
        ] as const
        for (const [tools, message] of cases) {
          const refused = yield* api.post("/api/v1/identities/groups", {
            name: "Wildcards",
            permissions: { access: [{ endpoint_id: "alpha", tools }] }
          })
          expect(refused).toMatchObject({ status: 400, body: { error: "invalid_request" } })
          expect(String(refused.body["error_description"])).toContain(message)
        }
        expect(((yield* api.get("/api/v1/identities")).body["groups"] as Array<unknown>).length).toBe(before)
        const created = yield* api.post("/api/v1/identities/groups", {
          name: "Wildcards",
          permissions: { access: [{ endpoint_id: "alpha", tools: ["*"] }] }
        })
        expect(created.status).toBe(201)
        // An update is checked alike.
        const updated = yield* api.put(
          `/api/v1/identities/groups/${String(created.body["id"])}`,
          { permissions: { access: [{ endpoint_id: "alpha", tools: ["echo", "*"] }] } },
          ifMatch(created.body)
        )
        expect(updated).toMatchObject({ status: 400, body: { error: "invalid_request" } })
      })
  )

  it.scoped("memberships older than enterprise_membership_max_age are stale: the user's access stops", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway({ auth: () => ({ enterprise_membership_max_age: "1h" }) })
      const totp: { secret?: Uint8Array } = {}
      const api = managementApi(gateway, yield* adminToken(gateway, totp))
      const { userId, sales } = yield* inGateway(gateway)(enterpriseSalesperson)
      yield* api.post("/api/v1/identities/groups", { name: "Sales", source_groups: [sales] })
      const users = (yield* api.get("/api/v1/identities")).body["users"] as Array<Record<string, unknown>>
      yield* api.put(`/api/v1/identities/${userId}`, { enabled: true }, ifMatch(users.find((u) => u["id"] === userId)!))
      const fresh = (yield* api.get(`/api/v1/identities/${userId}/effective-access`)).body
      expect(fresh).toMatchObject({
        active: true,
        membership_stale: false,
        groups: [{ group_name: "Sales", via: "mapped" }]
      })
      yield* TestClock.adjust("61 minutes")
      // The administrator's token lived 10 minutes: a new sign-in, at the new time.
      const later = managementApi(gateway, yield* adminToken(gateway, totp, 61 * 60_000))
      const stale = (yield* later.get(`/api/v1/identities/${userId}/effective-access`)).body
      expect(stale).toMatchObject({ active: true, membership_stale: true })
    })
  )

  it.scoped("only the built-in administrator maps organization groups; only organization groups can be mapped", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway()
      const admin = managementApi(gateway, yield* adminToken(gateway))
      const { sales } = yield* inGateway(gateway)(enterpriseSalesperson)
      const alice = yield* addLocalUser(gateway, "alice", "alice's long passphrase")
      yield* inGateway(gateway)(grantAccessTo(alice, [], { roles: ["admin"] }))
      const token = yield* signInForAdminToken(gateway, "alice", "alice's long passphrase")
      const other = managementApi(gateway, String(token["access_token"]))
      const refused = yield* other.post("/api/v1/identities/groups", { name: "Mapped", source_groups: [sales] })
      expect(refused).toMatchObject({ status: 403, body: { error: "builtin_administrator_required" } })
      // Alice may still create unmapped groups.
      expect((yield* other.post("/api/v1/identities/groups", { name: "Plain" })).status).toBe(201)
      const notOrganization = yield* admin.post("/api/v1/identities/groups", {
        name: "Nested",
        source_groups: ["administrators"]
      })
      expect(notOrganization).toMatchObject({ status: 400, body: { error: "invalid_request" } })
      expect(String(notOrganization.body["error_description"])).toContain("only organization groups")
      const ok = yield* admin.post("/api/v1/identities/groups", { name: "Mapped", source_groups: [sales] })
      expect(ok.status).toBe(201)
      // Roles on a mapped group reach the whole organization group: only the built-in administrator
      // gives them. Alice may still change what the mapped group grants.
      const mappedId = String(ok.body["id"])
      const withRole = yield* other.put(
        `/api/v1/identities/groups/${mappedId}`,
        { permissions: { roles: ["admin"] } },
        ifMatch(ok.body)
      )
      expect(withRole).toMatchObject({ status: 403, body: { error: "builtin_administrator_required" } })
      const withAccess = yield* other.put(
        `/api/v1/identities/groups/${mappedId}`,
        { permissions: { access: [{ endpoint_id: "alpha", tools: ["echo"] }] } },
        ifMatch(ok.body)
      )
      expect(withAccess.status).toBe(200)
      // Organization groups cannot take direct members.
      const users = (yield* admin.get("/api/v1/identities")).body["users"] as Array<Record<string, unknown>>
      const aliceRecord = users.find((user) => user["id"] === alice)!
      const joined = yield* admin.put(
        `/api/v1/identities/${alice}`,
        {
          enabled: true,
          groups: [...(aliceRecord["groups"] as Array<{ id: string }>).map((group) => group.id), sales]
        },
        ifMatch(aliceRecord)
      )
      expect(joined).toMatchObject({ status: 400, body: { error: "invalid_request" } })
      expect(String(joined.body["error_description"])).toContain("organization group")
    })
  )

  it.scopedLive(
    "lists HTTP tools and tool groups' tools: the endpoint that decides, its kind, and the member a group's tool runs",
    () =>
      Effect.gen(function* () {
        const alpha = yield* Effect.acquireRelease(
          Effect.promise(() => startBackend("alpha", alphaTools)),
          (backend) => Effect.promise(() => backend.stop())
        )
        const { tool: forecast, ...weather } = Schema.decodeUnknownSync(HttpTool)({
          id: "weather",
          tool_rules: [{ tools: ["*"] }],
          tool: { name: "forecast", method: "GET", url: "https://weather.example.com/forecast/{city}" }
        })
        const gateway = yield* oauthGateway({
          patch: {
            backends: [{ id: "alpha", url: alpha.url, allow_insecure_http: true, tool_rules: [{ tools: ["echo"] }] }]
          },
          sources: {
            managed: false,
            http: [{ kind: "http_tool", ...weather, credentials: weather.credentials, tools: [forecast] }],
            toolGroups: [
              Schema.decodeUnknownSync(ToolGroup)({
                id: "toolbox",
                members: [
                  { endpoint: "alpha", tool: "echo" },
                  { endpoint: "weather", tool: "forecast" }
                ]
              })
            ]
          }
        })
        const api = managementApi(gateway, yield* adminToken(gateway, {}, Date.now()))
        const { userId } = yield* inGateway(gateway)(grantAccess([{ endpoint_id: "toolbox", tools: ["*"] }]))
        const explained = yield* api.get(`/api/v1/identities/${userId}/effective-access`)
        expect(explained.status).toBe(200)
        const tools = new Map(
          (explained.body["tools"] as Array<Record<string, unknown>>).map((tool) => [tool["name"], tool])
        )
        expect([...tools.keys()]).toEqual(["alpha__echo", "toolbox__echo", "toolbox__forecast", "weather__forecast"])
        expect(tools.get("toolbox__forecast")).toMatchObject({
          backend: "toolbox",
          endpoint_kind: "tool_group",
          member: { endpoint: "weather", tool: "forecast" },
          tool: "forecast",
          decision: "allow",
          matched_by: ["*"]
        })
        expect(tools.get("toolbox__echo")).toMatchObject({
          backend: "toolbox",
          member: { endpoint: "alpha", tool: "echo" },
          decision: "allow"
        })
        // Granted the group, not its members' endpoints.
        expect(tools.get("weather__forecast")).toMatchObject({
          backend: "weather",
          endpoint_kind: "http_tool",
          decision: "deny",
          reason: "no_access_entry"
        })
        expect(tools.get("alpha__echo")).toMatchObject({ endpoint_kind: "backend", decision: "deny" })
      })
  )
})
