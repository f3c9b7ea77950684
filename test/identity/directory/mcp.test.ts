/**
 * docs/directory.md, "Applying" — what /mcp sees: a person a snapshot deactivates is refused on the
 * very next request with a still-valid token; and while a large snapshot moves a person from one
 * organization group to another, every tools/list answer is the old view or the new, never a mix.
 */

import { it as effectIt } from "@effect/vitest"
import { Clock, Effect, Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { namespaceOf } from "../../../src/identity/upstream/connection.js"
import { Permissions } from "../../../src/policy/permissions.js"
import { PolicyWrites } from "../../../src/policy/writes.js"
import { GroupRepo } from "../../../src/store/groups.js"
import { DIRECTORY_TOKEN, push, snapshot } from "../../support/directory.js"
import { gatewayWithUpstream, providerForPort, signInThroughUpstream } from "../../support/enterprise-sign-in.js"
import { freePort } from "../../support/gateway-process.js"
import { testActor } from "../../support/grants.js"
import { commonTools, startBackend, type TestBackend } from "../../support/mcp-backends.js"
import { jsonRpcOf, rawPost } from "../../support/mcp-clients.js"
import { startTestGateway, type TestGateway } from "../../support/mcp-gateway.js"
import { beginCodeFlow, callbackParams, exchange, refresh } from "../../support/oauth-client.js"
import type { OAuthGateway } from "../../support/oauth-gateway.js"

let backend: TestBackend
let gateway: TestGateway
let provider: string

beforeAll(async () => {
  backend = await startBackend("alpha", (server) => commonTools(server, "alpha"))
  gateway = await startTestGateway({
    policy: "store",
    env: { UPSTREAM_SECRET: "upstream-secret", DIRECTORY_TOKEN },
    auth: {
      sso: {
        upstream: {
          protocol: "oidc",
          issuer: "https://login.example.com",
          client_id: "gateway",
          client_secret_env: "UPSTREAM_SECRET"
        },
        directory_token_env: "DIRECTORY_TOKEN"
      }
    },
    patch: {
      backends: [
        { id: "alpha", url: backend.url, allow_insecure_http: true, required: true, tool_rules: [{ tools: ["*"] }] }
      ]
    }
  })
  provider = namespaceOf(gateway.loaded().config.auth.sso.upstream!)
})
afterAll(async () => {
  await gateway?.close()
  await backend?.stop()
})

const asOAuthGateway = () => ({ baseUrl: gateway.baseUrl }) as OAuthGateway

/** An enabled enterprise person of the provider, as a sign-in leaves them; their user id. */
const enabledPerson = (subject: string) =>
  gateway.run(
    Effect.gen(function* () {
      const writes = yield* PolicyWrites
      const at = new Date(yield* Clock.currentTimeMillis)
      const user = yield* writes.admitEnterpriseUser(
        { namespace: provider, subject, name: subject, groups: [], departments: [], bootstrap: false },
        at
      )
      yield* writes.updateUser(testActor, user.id, user.revision, { enabled: true })
      return user.id
    })
  )

/** A permission group granting `tool` of alpha to the organization group `externalId` of the provider. */
const mapTool = (externalId: string, tool: string) =>
  gateway.run(
    Effect.gen(function* () {
      const group = (yield* (yield* GroupRepo).list).find(
        (row) => row.provider === provider && row.external_id === externalId
      )!
      return yield* (yield* PolicyWrites).createGroup(testActor, {
        name: `via-${externalId}`,
        enabled: true,
        permissions: Schema.decodeUnknownSync(Permissions)({
          roles: [],
          scopes: [],
          access: [{ endpoint_id: "alpha", tools: [tool] }]
        }),
        sourceGroups: [group.id]
      })
    })
  )

const toolsOf = async (token: string) => {
  const response = await rawPost(
    gateway.mcpUrl,
    JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }),
    { "mcp-protocol-version": "2025-11-25", authorization: `Bearer ${token}` }
  )
  if (response.status !== 200) return `HTTP ${response.status}`
  const body = await jsonRpcOf(response)
  const tools = ((body["result"] as { tools?: Array<{ name: string }> })?.tools ?? []).map((tool) => tool.name)
  return tools.sort().join(",")
}

const filler = (count: number, group: string) =>
  Array.from({ length: count }, (_, index) => [`filler-${index}`, true, [group]] as const)

describe("directory snapshots and /mcp", () => {
  it("a person the snapshot deactivates is refused on the next request, without waiting for the token to expire", async () => {
    const userId = await enabledPerson("dana")
    const token = await gateway.token({ subject: userId })
    expect((await Effect.runPromise(push(asOAuthGateway(), snapshot(1, [["dana", true, ["eng"]]])))).status).toBe(200)
    expect(await toolsOf(token)).not.toMatch(/^HTTP/)
    expect((await Effect.runPromise(push(asOAuthGateway(), snapshot(2, [])))).body).toMatchObject({ deactivated: 1 })
    expect(await toolsOf(token)).toBe("HTTP 401")
  })

  it("while a large snapshot moves a person between groups, every tools/list answer is the old view or the new", async () => {
    const userId = await enabledPerson("erin")
    expect(
      (
        await Effect.runPromise(
          push(asOAuthGateway(), snapshot(10, [["erin", true, ["eng"]], ...filler(8_000, "eng")]))
        )
      ).status
    ).toBe(200)
    await mapTool("eng", "echo")
    await mapTool("ops", "search")
    const token = await gateway.token({ subject: userId })
    expect(await toolsOf(token)).toBe("alpha__echo")

    const seen = new Set<string>()
    let applying = true
    let asked = 0
    const watcher = (async () => {
      while (applying) {
        seen.add(await toolsOf(token))
        asked++
      }
    })()
    const moved = await Effect.runPromise(
      push(asOAuthGateway(), snapshot(11, [["erin", true, ["ops"]], ...filler(8_000, "ops")]))
    )
    applying = false
    await watcher
    expect(moved.status).toBe(200)
    expect(moved.body).toMatchObject({ memberships_added: 8_001, memberships_removed: 8_001 })
    seen.add(await toolsOf(token))
    expect([...seen].filter((view) => view !== "alpha__echo" && view !== "alpha__search")).toEqual([])
    expect(seen.has("alpha__search")).toBe(true)
    // Asked while the snapshot was applied (SQLite statements run on the event loop, so not often).
    expect(asked).toBeGreaterThan(1)
  }, 60_000)
})

describe("directory snapshots and browser sign-ins", () => {
  effectIt.scoped(
    "a person the directory deactivates cannot use their browser sign-in for a new authorization, nor refresh",
    () =>
      Effect.gen(function* () {
        const port = yield* Effect.promise(freePort)
        const provider = yield* providerForPort(port)
        provider.accounts.set("alice-sub", { name: "Alice" })
        const { gateway } = yield* gatewayWithUpstream(
          port,
          provider,
          {},
          { bootstrap_subjects: ["alice-sub"], directory_token_env: "DIRECTORY_TOKEN" },
          { DIRECTORY_TOKEN }
        )
        const done = yield* Effect.promise(() => signInThroughUpstream(gateway, provider, "alice-sub"))
        const code = callbackParams(done.last).get("code")!
        const tokens = yield* Effect.promise(() =>
          exchange(
            gateway.baseUrl,
            {
              code,
              verifier: done.verifier,
              redirectUri: "http://127.0.0.1:50000/callback",
              clientId: "cli",
              callback: new URLSearchParams()
            },
            { scope: "offline_access" }
          )
        )
        // The browser is signed in: a new authorization is answered with a code at once.
        const again = yield* Effect.promise(async () =>
          done.browser.follow((await beginCodeFlow(done.browser, "http://127.0.0.1:50000/callback")).response)
        )
        expect(callbackParams(again).get("code")).toEqual(expect.any(String))

        expect((yield* push(gateway, snapshot(1, [["alice-sub", false]]))).body).toMatchObject({ deactivated: 1 })
        const after = yield* Effect.promise(async () =>
          done.browser.follow((await beginCodeFlow(done.browser, "http://127.0.0.1:50000/callback")).response)
        )
        expect(after.status).toBe(200)
        expect(yield* Effect.promise(() => after.text())).toContain("upstream-sign-in")
        const refreshed = yield* Effect.promise(() => refresh(gateway.baseUrl, String(tokens.body["refresh_token"])))
        expect(refreshed.body["error"]).toBe("invalid_grant")
      }),
    60_000
  )
})
