/**
 * docs/tool-sources.md, "Configuration review" — ConfigChangesLive on a real in-process gateway with
 * real MCP backends, on both stores: with `admin.approvals.policy_changes.enabled` a create or update is
 * a proposal (202) that activates nothing; self-review is refused; an approval applies it in one reload;
 * a pure disable applies at once; a concurrent modification of the target or of a tool group's member
 * fails the application and overwrites nothing; a start invalidates unreviewed proposals and marks
 * interrupted ones `unknown`. (The review pages that call ConfigChanges are another part's; here the
 * service is called as they will call it.)
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Option } from "effect"
import { ConfigChanges, type Person } from "../../src/sources/changes.js"
import { recoverProposals } from "../../src/sources/changes-live.js"
import { ProposalRepo } from "../../src/store/source-proposals.js"
import { UserRepo } from "../../src/store/users.js"
import { adminToken, ifMatch, managementApi } from "../support/admin-api.js"
import { storeKinds } from "../support/databases.js"
import { LogCapture } from "../support/logs.js"
import { inGateway, oauthGateway } from "../support/oauth-gateway.js"
import { backendServer, mcpUser } from "../support/tool-source-gateway.js"

const SECRET = "header-secret-value-0123456789"
const reviewer: Person = { user_id: "security-reviewer-1", name: "Rita Reviewer" }

describe.each(storeKinds)("configuration review of tool sources (%s)", (kind) => {
  it.scopedLive(
    "a proposal activates nothing until a different person approves; self-review refused; a concurrent change fails the application",
    () =>
      Effect.gen(function* () {
        const alpha = yield* backendServer("alpha")
        const beta = yield* backendServer("beta")
        const logs = new LogCapture()
        const gateway = yield* oauthGateway({
          kind,
          logs,
          patch: {
            admin: { approvals: { policy_changes: { enabled: true } } },
            backends: [{ id: "alpha", url: alpha.url, allow_insecure_http: true, tool_rules: [{ tools: ["echo"] }] }]
          }
        })
        const inside = <A, E>(effect: Effect.Effect<A, E, ConfigChanges | ProposalRepo | UserRepo>) =>
          logs.capture(Effect.provide(effect, gateway.base))
        const changes = (run: (service: typeof ConfigChanges.Service) => Effect.Effect<unknown, unknown>) =>
          inside(Effect.flatMap(ConfigChanges, run).pipe(Effect.either))
        const adminId = Option.getOrThrow(yield* inside(Effect.flatMap(UserRepo, (users) => users.findBuiltinAdmin))).id
        const api = managementApi(gateway, yield* adminToken(gateway, {}, Date.now()))
        const toolNames = yield* mcpUser(gateway, ["alpha", "beta"])

        const body = {
          id: "beta",
          url: beta.url,
          allow_insecure_http: true,
          tool_rules: [{ tools: ["*"] }],
          headers: { "x-api-key": SECRET }
        }
        const proposed = yield* api.post("/api/v1/backends", body)
        expect(proposed.status).toBe(202)
        const proposalId = String(proposed.body["approval_id"])
        expect(proposed.body).toEqual({
          pending_approval: true,
          approval_id: proposalId,
          approval_url: `${gateway.baseUrl}/auth/login?role=security&proposal=${proposalId}`
        })
        expect(yield* toolNames).toEqual(["alpha__echo"])
        expect((yield* api.get("/api/v1/backends/beta")).status).toBe(404)
        const shown = yield* api.get(`/api/v1/proposals/${proposalId}`)
        expect(shown.body).toMatchObject({ state: "pending_approval", action: "create", target_id: "beta" })
        expect(shown.body["diff"]).toContainEqual({
          path: "/headers/x-api-key",
          before: null,
          after: { configured: true, changed: true }
        })
        expect(JSON.stringify(shown.body)).not.toContain(SECRET)

        const self = yield* changes((service) => service.approve(proposalId, { user_id: adminId, name: "Admin" }))
        expect(Either.isLeft(self) && (self.left as { _tag: string })._tag).toBe("SelfReview")
        const approved = yield* changes((service) => service.approve(proposalId, reviewer))
        expect(Either.getOrThrow(approved)).toMatchObject({ state: "applied", decided_by: reviewer })
        expect(yield* toolNames).toEqual(["alpha__echo", "beta__echo", "beta__search"])
        const again = yield* changes((service) => service.approve(proposalId, reviewer))
        expect(Either.isLeft(again) && again.left).toMatchObject({ _tag: "ProposalNotPending", state: "applied" })

        // An update is proposed; meanwhile a pure disable applies at once (it only takes tools away).
        const record = (yield* api.get("/api/v1/backends/beta")).body
        const narrowed = yield* api.put(
          "/api/v1/backends/beta",
          { ...body, headers: { "x-api-key": { configured: true } }, tool_rules: [{ tools: ["echo"] }] },
          ifMatch(record)
        )
        expect(narrowed.status).toBe(202)
        const disabled = yield* api.put(
          "/api/v1/backends/beta",
          { ...(record["definition"] as object), enabled: false },
          ifMatch(record)
        )
        expect(disabled.status).toBe(200)
        expect(disabled.body).toMatchObject({ revision: "2", definition: { enabled: false } })
        expect(yield* toolNames).toEqual(["alpha__echo"])
        const stale = yield* changes((service) => service.approve(String(narrowed.body["approval_id"]), reviewer))
        expect(Either.isLeft(stale) && stale.left).toMatchObject({
          _tag: "ProposalApplicationFailed",
          reason: "target_changed"
        })
        expect(String(Either.isLeft(stale) && (stale.left as { message: string }).message)).toContain(
          "A fresh proposal is needed"
        )
        expect(yield* toolNames).toEqual(["alpha__echo"])
        expect((yield* api.get(`/api/v1/proposals/${narrowed.body["approval_id"]}`)).body).toMatchObject({
          state: "failed"
        })

        // A tool group proposed over alpha; alpha changes meanwhile (disabled): a dependency changed.
        const group = yield* api.post("/api/v1/tool-groups", {
          id: "g1",
          members: [{ endpoint: "alpha", tool: "echo" }]
        })
        expect(group.status).toBe(202)
        const alphaRecord = (yield* api.get("/api/v1/backends/alpha")).body
        const alphaOff = yield* api.put(
          "/api/v1/backends/alpha",
          { ...(alphaRecord["definition"] as object), enabled: false },
          ifMatch(alphaRecord)
        )
        expect(alphaOff.status).toBe(200)
        const dependency = yield* changes((service) => service.approve(String(group.body["approval_id"]), reviewer))
        expect(Either.isLeft(dependency) && dependency.left).toMatchObject({ reason: "dependency_changed" })
        expect((yield* api.get("/api/v1/tool-groups/g1")).status).toBe(404)

        // Rejection: not by the proposer; by a reviewer it ends the proposal.
        const another = yield* api.post("/api/v1/tool-groups", {
          id: "g2",
          members: [{ endpoint: "beta", tool: "echo" }]
        })
        const anotherId = String(another.body["approval_id"])
        const selfReject = yield* changes((service) => service.reject(anotherId, { user_id: adminId, name: "A" }))
        expect(Either.isLeft(selfReject) && selfReject.left).toMatchObject({ _tag: "SelfReview" })
        const rejected = yield* changes((service) => service.reject(anotherId, reviewer))
        expect(Either.getOrThrow(rejected)).toMatchObject({ state: "rejected" })

        expect(logs.events("config.proposed")).toHaveLength(4)
        expect(logs.events("config.self_review_refused")).toHaveLength(2)
        expect(logs.events("config.approved")).toHaveLength(3)
        expect(logs.events("config.application_failed").map((event) => event["reason"])).toEqual([
          "target_changed",
          "dependency_changed"
        ])
        expect(logs.events("config.rejected")).toHaveLength(1)
        expect(logs.text()).not.toContain(SECRET)
      })
  )

  it.scopedLive("a start invalidates proposals not yet reviewed and marks one interrupted while applying unknown", () =>
    Effect.gen(function* () {
      const alpha = yield* backendServer("alpha")
      const gateway = yield* oauthGateway({
        kind,
        patch: {
          admin: { approvals: { policy_changes: { enabled: true } } },
          backends: [{ id: "alpha", url: alpha.url, allow_insecure_http: true }]
        }
      })
      const api = managementApi(gateway, yield* adminToken(gateway, {}, Date.now()))
      const first = yield* api.post("/api/v1/tool-groups", { id: "g1", members: [{ endpoint: "alpha", tool: "echo" }] })
      const second = yield* api.post("/api/v1/tool-groups", {
        id: "g2",
        members: [{ endpoint: "alpha", tool: "echo" }]
      })
      const [firstId, secondId] = [String(first.body["approval_id"]), String(second.body["approval_id"])]
      // As a crash would leave it: the second was being applied when the process stopped.
      yield* inGateway(gateway)(
        Effect.flatMap(ProposalRepo, (repo) => repo.transition(secondId, "pending_approval", "applying", {}))
      )
      // What every start runs before its first generation (src/runtime/generations.ts).
      yield* inGateway(gateway)(recoverProposals)
      const listed = yield* api.get("/api/v1/proposals")
      const states = Object.fromEntries(
        (listed.body["items"] as Array<{ id: string; state: string }>).map((item) => [item.id, item.state])
      )
      expect(states).toEqual({ [firstId]: "invalidated", [secondId]: "unknown" })
      const late = yield* inGateway(gateway)(
        Effect.flatMap(ConfigChanges, (service) => service.approve(firstId, reviewer)).pipe(Effect.either)
      )
      expect(Either.isLeft(late) && late.left).toMatchObject({ _tag: "ProposalNotPending", state: "invalidated" })
      expect((yield* api.get("/api/v1/proposals?state=invalidated")).body["items"]).toHaveLength(1)
    })
  )
})
