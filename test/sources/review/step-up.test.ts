/**
 * docs/tool-sources.md, "Configuration review" with `require_step_up`: a security reviewer signed in
 * through the real OpenID Provider signs in there again for one proposal (`prompt=login`, `max_age`,
 * `acr_values` of `approvals.step_up`), exactly as for a write approval; approving counts only after a
 * fresh authentication of the same person asserting an accepted `acr`. `ConfigChanges` is the test
 * stand-in over state in memory (test/support/config-changes.ts) until the live service is merged.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option, Schema } from "effect"
import { PolicyWrites } from "../../../src/policy/writes.js"
import { UserRepo } from "../../../src/store/users.js"
import { reviewGateway } from "../../support/config-review.js"
import { UPSTREAM_SECRET_ENV, upstreamLink, upstreamSettings } from "../../support/enterprise-sign-in.js"
import { freePort } from "../../support/gateway-process.js"
import { createGroup, testActor } from "../../support/grants.js"
import { LogCapture } from "../../support/logs.js"
import { Browser } from "../../support/oauth-client.js"
import { inGateway } from "../../support/oauth-gateway.js"
import { startOidcProvider } from "../../support/oidc-provider.js"

const promise = <A>(run: () => Promise<A>) => Effect.promise(run)
const MFA = "urn:gateway:mfa"

const stepUpLink = (html: string) => html.match(/id="step-up" href="([^"]+)"/)?.[1]?.replaceAll("&amp;", "&")
const csrfOf = (html: string) => html.match(/name="csrf" value="([^"]*)"/)?.[1] ?? ""

describe("step-up for a configuration change when require_step_up is set", () => {
  it.scopedLive(
    "a wrong acr and another person are refused; a fresh sign-in with an accepted acr lets that reviewer approve",
    () =>
      Effect.gen(function* () {
        const port = yield* promise(freePort)
        const provider = yield* Effect.acquireRelease(
          promise(() => startOidcProvider({ redirectUri: `http://127.0.0.1:${port}/sso/callback` })),
          (started) => promise(() => started.close())
        )
        provider.accounts.set("rita", { name: "Rita Security" })
        provider.accounts.set("mallory", { name: "Mallory" })
        const logs = new LogCapture()
        const { gateway, changes } = yield* reviewGateway({
          port,
          logs,
          env: { [UPSTREAM_SECRET_ENV]: provider.clientSecret },
          auth: () => ({ sso: { upstream: upstreamSettings(provider) } }),
          policyChanges: { require_step_up: true },
          patch: { approvals: { step_up: { acr_values: [MFA], max_age: "5m" } } }
        })
        const id = changes.propose({ proposer: { user_id: "administrator-1", name: "Ada Admin" } })
        const proposal = `/auth/reviews/${id}`

        // Rita signs in through the provider: created pending the first time; an administrator enables
        // her and makes her a security reviewer; she signs in again from the approval link.
        const browser = new Browser(gateway.baseUrl)
        const signIn = (account: string) =>
          promise(async () => {
            const page = await browser.follow(await browser.get(`/auth/login?role=security&proposal=${id}`))
            const toProvider = await browser.get(upstreamLink(await page.text()))
            provider.nextLogin = { accountId: account, acr: "urn:gateway:password" }
            const callback = await provider.signIn(toProvider.headers.get("location")!)
            return browser.follow(await browser.get(callback.toString()))
          })
        expect((yield* signIn("rita")).status).toBe(403)
        yield* inGateway(gateway)(
          Effect.gen(function* () {
            const sql = yield* SqlClient.SqlClient
            const rows = yield* sql`SELECT id FROM users WHERE external_subject = 'rita'`.pipe(
              Effect.flatMap(Schema.decodeUnknown(Schema.Array(Schema.Struct({ id: Schema.String }))))
            )
            const userId = rows[0]!.id
            const reviewers = yield* createGroup([], { roles: ["security_reviewer"] })
            const user = Option.getOrThrow(yield* (yield* UserRepo).findById(userId))
            yield* (yield* PolicyWrites).updateUser(testActor, userId, user.revision, {
              enabled: true,
              groups: [reviewers]
            })
          })
        )
        const landing = yield* signIn("rita")
        expect(landing.status).toBe(200)
        expect(new URL(landing.url).pathname).toBe(proposal)
        const page = yield* promise(() => landing.text())
        expect(page).toContain('id="step-up"')
        expect(page).not.toContain('id="approve"')

        // Approving without the step-up is refused.
        const approve = (html: string) =>
          promise(() => browser.post(`${proposal}/approve`, { csrf: csrfOf(html) }, { origin: gateway.baseUrl }))
        expect((yield* approve(page)).status).toBe(409)
        expect(changes.calls).toEqual([])

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
        // A step-up link without this sign-in's token starts nothing.
        const forged = yield* promise(() => browser.get(`${proposal}/step-up?csrf=forged`))
        expect(forged.status).toBe(403)
        const weak = yield* stepUp("rita", "urn:gateway:password")
        expect(weak.status).toBe(403)
        const someoneElse = yield* stepUp("mallory", MFA)
        expect(someoneElse.status).toBe(403)
        expect(yield* promise(() => someoneElse.text())).toContain("as someone else")
        expect(logs.events("config.review_step_up_refused")).toEqual([
          expect.objectContaining({ proposal_id: id, reason: "acr_not_accepted" }),
          expect.objectContaining({ proposal_id: id, reason: "other_person" })
        ])
        // Nothing of it was counted for a write approval either.
        expect(logs.events("approval.step_up_refused")).toEqual([])

        const strong = yield* stepUp("rita", MFA)
        expect(strong.status).toBe(303)
        expect(strong.headers.get("location")).toBe(`${proposal}?done=step-up`)
        expect(logs.events("config.review_step_up")).toEqual([expect.objectContaining({ proposal_id: id, acr: MFA })])
        const ready = yield* promise(async () => (await browser.get(strong.headers.get("location")!)).text())
        expect(ready).toContain("Your identity provider confirmed you: you can approve now.")
        expect(ready).toContain('id="approve"')
        expect((yield* approve(ready)).status).toBe(303)
        expect(changes.applied).toEqual([id])
        expect(logs.events("config.review_refused").map((line) => line["reason"])).toEqual(["step_up_required", "csrf"])
      })
  )
})
