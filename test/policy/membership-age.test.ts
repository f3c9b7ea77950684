/**
 * docs/access-policy.md, "Rules", and `auth.enterprise_membership_max_age` — enterprise
 * membership older than the max age stops refresh and tool access until a new sign-in or directory
 * sync. A real session and refresh token of an enterprise user (as its sign-in will leave them), the
 * real token endpoint and /mcp, under TestClock.
 */
import { randomBytes } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, TestClock } from "effect"
import { newRefreshToken } from "../../src/auth/token/mint.js"
import { Signer } from "../../src/crypto/signer.js"
import { PolicyWrites } from "../../src/policy/writes.js"
import { GroupRepo } from "../../src/store/groups.js"
import { RefreshTokenRepo } from "../../src/store/refresh-tokens.js"
import { SessionRepo } from "../../src/store/sessions.js"
import { UserRepo } from "../../src/store/users.js"
import { createGroup, testActor } from "../support/grants.js"
import { refresh } from "../support/oauth-client.js"
import { inGateway, oauthGateway } from "../support/oauth-gateway.js"
import { listTools } from "../support/oauth-session.js"

const promise = <A>(run: () => Promise<A>) => Effect.promise(run)

/** An enabled enterprise user in organization group `sales` (verified now), signed in through client `cli`. */
const signedInEnterpriseUser = (issuer: string, resource: string) =>
  Effect.gen(function* () {
    const now = yield* Clock.currentTimeMillis
    const at = new Date(now)
    const users = yield* UserRepo
    const writes = yield* PolicyWrites
    const userId = yield* users.insertEnterprise({
      namespace: "oidc:test",
      externalSubject: "s1",
      displayName: "S",
      at
    })
    const [sales] = yield* (yield* GroupRepo).upsertOrganizationGroups(
      "oidc:test",
      "group",
      [{ externalId: "sales", name: "Sales" }],
      at
    )
    const mapped = yield* createGroup([])
    const group = (yield* (yield* GroupRepo).find(mapped))!
    yield* writes.updateGroup(testActor, mapped, group.revision, { sourceGroups: [sales!] })
    yield* writes.setUpstreamMemberships(userId, "claims", [sales!], at)
    yield* writes.updateUser(testActor, userId, 1, { enabled: true })
    const sessionId = randomBytes(16).toString("base64url")
    yield* (yield* SessionRepo).insert({
      id: sessionId,
      userId,
      clientId: "cli",
      scope: "offline_access",
      resource,
      authTime: at,
      createdAt: at,
      expiresAt: new Date(now + 8 * 3600_000)
    })
    const refreshToken = newRefreshToken()
    yield* (yield* RefreshTokenRepo).insert(refreshToken.hash, sessionId, at)
    const access = yield* (yield* Signer).sign(
      { scope: "offline_access", client_id: "cli", sid: sessionId },
      { issuer, audience: resource, subject: userId, expiresInSeconds: 600 }
    )
    return { refreshToken: refreshToken.token, access }
  })

describe("enterprise membership max age", () => {
  it.scoped("stops /mcp and refresh once the memberships are older than auth.enterprise_membership_max_age", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway({ auth: () => ({ enterprise_membership_max_age: "55m" }) })
      const user = yield* inGateway(gateway)(signedInEnterpriseUser(gateway.issuer, gateway.mcpUrl))
      expect((yield* listTools(gateway.mcpUrl, user.access)).status).toBe(200)
      yield* TestClock.adjust("50 minutes")
      const renewed = yield* promise(() => refresh(gateway.baseUrl, user.refreshToken))
      expect(renewed.response.status).toBe(200)
      // The renewed token (valid until minute 60) is used two seconds before the memberships' 55
      // minutes run out, and again a second after: with its verification, session and view all
      // still cached, the second request is refused for the memberships' age alone.
      yield* TestClock.adjust("298 seconds")
      const fresh = String(renewed.body["access_token"])
      expect((yield* listTools(gateway.mcpUrl, fresh)).status).toBe(200)
      yield* TestClock.adjust("3 seconds")
      const refused = yield* listTools(gateway.mcpUrl, fresh)
      expect(refused.status).toBe(401)
      expect(yield* promise(() => refused.json())).toMatchObject({
        error: "invalid_token",
        error_description: "The account's organization memberships must be confirmed again: sign in again."
      })
      const stale = yield* promise(() => refresh(gateway.baseUrl, String(renewed.body["refresh_token"])))
      expect(stale.body).toMatchObject({
        error: "invalid_grant",
        error_description: "The account's organization memberships must be confirmed again: sign in again."
      })
    })
  )
})
