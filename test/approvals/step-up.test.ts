/**
 * docs/approvals.md, "Step-up": a reviewer signed in through the real OpenID Provider signs in there
 * again for one approval (`prompt=login`, `max_age`, `acr_values`); the vote counts only with a fresh
 * authentication of the same person asserting an accepted `acr`.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Option, Schema } from "effect"
import { Approvals } from "../../src/approvals/service.js"
import { approvalSettingsOf } from "../../src/approvals/settings.js"
import { PolicyWrites } from "../../src/policy/writes.js"
import { UserRepo } from "../../src/store/users.js"
import { field, opsBackendConfig, startOps } from "../support/approvals.js"
import { UPSTREAM_SECRET_ENV, upstreamLink, upstreamSettings } from "../support/enterprise-sign-in.js"
import { freePort } from "../support/gateway-process.js"
import { createGroup, testActor } from "../support/grants.js"
import { LogCapture } from "../support/logs.js"
import { Browser } from "../support/oauth-client.js"
import { oauthGateway } from "../support/oauth-gateway.js"
import { startOidcProvider } from "../support/oidc-provider.js"

const promise = <A>(run: () => Promise<A>) => Effect.promise(run)
const MFA = "urn:gateway:mfa"

const stepUpLink = (html: string) => html.match(/id="step-up" href="([^"]+)"/)?.[1]?.replaceAll("&amp;", "&")

describe("step-up for an approval that requires it", () => {
  it.scopedLive(
    "a wrong acr and another person are refused; a fresh sign-in with an accepted acr lets that reviewer approve, and the vote records it",
    () =>
      Effect.gen(function* () {
        const port = yield* promise(freePort)
        const provider = yield* Effect.acquireRelease(
          promise(() => startOidcProvider({ redirectUri: `http://127.0.0.1:${port}/sso/callback` })),
          (started) => promise(() => started.close())
        )
        provider.accounts.set("rita", { name: "Rita Reviewer" })
        provider.accounts.set("mallory", { name: "Mallory" })
        const ops = yield* Effect.acquireRelease(promise(startOps), (started) => promise(() => started.stop()))
        const logs = new LogCapture()
        const gateway = yield* oauthGateway({
          port,
          logs,
          env: { [UPSTREAM_SECRET_ENV]: provider.clientSecret },
          auth: () => ({ sso: { upstream: upstreamSettings(provider) } }),
          patch: {
            backends: [opsBackendConfig(ops.url, { require_step_up: true, risk_rules: [] })],
            approvals: { step_up: { acr_values: [MFA], max_age: "5m" } }
          }
        })
        const run = <A, E>(effect: Effect.Effect<A, E, never>) => promise(() => Effect.runPromise(effect))
        const inBase = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
          run(Effect.provide(effect, gateway.base) as Effect.Effect<A, E, never>)

        // A pending approval of someone else's write (the MCP side is covered by flow.test.ts).
        const { config } = gateway.loaded
        const policy = config.backends[0]!.tool_rules[1]!.approval!
        const created = yield* inBase(
          Effect.gen(function* () {
            const now = yield* Clock.currentTimeMillis
            return yield* (yield* Approvals).request(
              {
                caller: {
                  issuer: config.auth.issuer,
                  subject: "requester-1",
                  scopes: new Set(),
                  clientId: "cli",
                  sessionId: undefined,
                  tokenId: undefined,
                  expiresAt: now + 600_000
                },
                requesterId: "requester-1",
                backend: "ops",
                tool: "deploy",
                exposedName: "ops__deploy",
                sourceHash: "test",
                arguments: { operation_id: "op-step-up", environment: "dev" },
                policy
              },
              approvalSettingsOf(config)
            )
          })
        )
        if (created._tag !== "Pending") throw new Error(`no approval: ${created._tag}`)
        const approvalId = created.row.id
        expect(created.row.require_step_up).toBe(true)

        // Rita signs in through the provider: the first time she is created pending; an administrator
        // enables her and makes her an approver; she signs in again and lands on the approval.
        const browser = new Browser(gateway.baseUrl)
        const signIn = (account: string) =>
          promise(async () => {
            const page = await browser.follow(await browser.get(`/sso?next=/sso/approvals/${approvalId}`))
            const toProvider = await browser.get(upstreamLink(await page.text()))
            provider.nextLogin = { accountId: account, acr: "urn:gateway:password" }
            const callback = await provider.signIn(toProvider.headers.get("location")!)
            return browser.follow(await browser.get(callback.toString()))
          })
        expect((yield* signIn("rita")).status).toBe(403)
        yield* inBase(
          Effect.gen(function* () {
            const sql = yield* SqlClient.SqlClient
            const rows = yield* sql`SELECT id FROM users WHERE external_subject = 'rita'`.pipe(
              Effect.flatMap(Schema.decodeUnknown(Schema.Array(Schema.Struct({ id: Schema.String }))))
            )
            const id = rows[0]!.id
            const approvers = yield* createGroup([], { roles: ["approver"] })
            const user = Option.getOrThrow(yield* (yield* UserRepo).findById(id))
            yield* (yield* PolicyWrites).updateUser(testActor, id, user.revision, {
              enabled: true,
              groups: [approvers]
            })
          })
        )
        const landing = yield* signIn("rita")
        expect(landing.status).toBe(200)
        const page = yield* promise(() => landing.text())
        expect(page).toContain('id="step-up"')
        expect(page).not.toContain('id="approve"')

        // Voting without the step-up is refused.
        const vote = (html: string) =>
          promise(() =>
            browser.post(
              `/sso/approvals/${approvalId}/approve`,
              { csrf: field(html, "csrf") ?? "", intent: created.row.intent_hash },
              { origin: gateway.baseUrl }
            )
          )
        expect((yield* vote(page)).status).toBe(409)

        const stepUp = (account: string, acr: string) =>
          promise(async () => {
            const toProvider = await browser.get(stepUpLink(page)!)
            expect(toProvider.status).toBe(303)
            const sent = new URL(toProvider.headers.get("location")!)
            expect(sent.searchParams.get("prompt")).toBe("login")
            expect(sent.searchParams.get("max_age")).toBe("300")
            expect(sent.searchParams.get("acr_values")).toBe(MFA)
            provider.nextLogin = { accountId: account, acr }
            const callback = await provider.signIn(sent.toString())
            return browser.get(callback.toString())
          })
        const weak = yield* stepUp("rita", "urn:gateway:password")
        expect(weak.status).toBe(403)
        const someoneElse = yield* stepUp("mallory", MFA)
        expect(someoneElse.status).toBe(403)
        expect(yield* promise(() => someoneElse.text())).toContain("as someone else")
        const reasons = logs.events("approval.step_up_refused").map((line) => line["reason"])
        expect(reasons).toEqual(["acr_not_accepted", "other_person"])

        const strong = yield* stepUp("rita", MFA)
        expect(strong.status).toBe(303)
        expect(strong.headers.get("location")).toBe(`/sso/approvals/${approvalId}?done=step-up`)
        const ready = yield* promise(async () => (await browser.get(strong.headers.get("location")!)).text())
        expect(ready).toContain('id="approve"')
        expect((yield* vote(ready)).status).toBe(303)

        const detail = yield* inBase(Effect.flatMap(Approvals, (approvals) => approvals.detail(approvalId)))
        expect(detail?.row.state).toBe("approved")
        expect(detail?.votes.map((each) => each.step_up_acr)).toEqual([MFA])
      })
  )
})
