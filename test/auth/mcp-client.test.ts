/**
 * docs/clients.md, "Clients with their own OAuth": real MCP clients (client SDK 2.x and
 * `@modelcontextprotocol/sdk` 1.x) start from an unauthenticated /mcp request, discover the gateway's
 * authorization server from the 401 and the metadata documents, sign a person in, and list tools.
 */

import { describe, expect, it } from "@effect/vitest"
import { Client, StreamableHTTPClientTransport, UnauthorizedError } from "@modelcontextprotocol/client"
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport as TransportV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { Effect, Option } from "effect"
import { UserRepo } from "../../src/store/users.js"
import { grantAccessTo } from "../support/grants.js"
import { alphaTools, startBackend } from "../support/mcp-backends.js"
import { Browser, callbackParams, signIn } from "../support/oauth-client.js"
import { defaultClients, inGateway, oauthGateway } from "../support/oauth-gateway.js"
import { MemoryOAuthProvider } from "../support/oauth-mcp-provider.js"
import { callerOf } from "../support/oauth-session.js"

const promise = <A>(run: () => Promise<A>) => Effect.promise(run)

/** A gateway with one real MCP backend behind it, on the real clock (backends connect with timeouts). */
const gatewayWithBackend = Effect.gen(function* () {
  const backend = yield* Effect.acquireRelease(
    promise(() => startBackend("alpha", alphaTools)),
    (started) => promise(() => started.stop())
  )
  const gateway = yield* oauthGateway({
    auth: (origin, adminUrl) => ({ sso: { clients: defaultClients(origin, adminUrl) } }),
    patch: {
      backends: [{ id: "alpha", url: backend.url, allow_insecure_http: true, tool_rules: [{ tools: ["*"] }] }]
    }
  })
  // The administrator's own group grants no business tools: a permission group gives it alpha's tools.
  yield* inGateway(gateway)(
    Effect.flatMap(UserRepo, (users) => users.findBuiltinAdmin).pipe(
      Effect.flatMap((admin) => grantAccessTo(Option.getOrThrow(admin).id, [{ endpoint_id: "alpha", tools: ["echo"] }]))
    )
  )
  return gateway
})

/** Plays the person in the browser: opens the URL the SDK produced, signs in, returns the callback. */
const personSignsIn = async (origin: string, authorizationUrl: URL | undefined, totp: { secret?: Uint8Array }) => {
  if (authorizationUrl === undefined) throw new Error("the client did not start an authorization")
  const browser = new Browser(origin)
  const page = await browser.follow(await browser.get(authorizationUrl.toString()))
  return callbackParams(await signIn(browser, page, { totp, nowMs: Date.now() }))
}

describe("real MCP clients sign in through the built-in authorization server", () => {
  it.scopedLive("client SDK 2.x: 401 → discovery → browser sign-in → tokens → tools/list; disabling cuts it off", () =>
    Effect.gen(function* () {
      const gateway = yield* gatewayWithBackend
      const provider = new MemoryOAuthProvider("http://127.0.0.1:47001/callback", gateway.issuer)
      const first = new StreamableHTTPClientTransport(new URL(gateway.mcpUrl), { authProvider: provider })
      const refused = yield* promise(() =>
        new Client({ name: "t", version: "1" }).connect(first).then(
          () => undefined,
          (error: unknown) => error
        )
      )
      expect(refused).toBeInstanceOf(UnauthorizedError)
      const url = provider.authorizationUrl!
      expect(`${url.origin}${url.pathname}`).toBe(`${gateway.issuer}/authorize`)
      expect(url.searchParams.get("resource")).toBe(gateway.mcpUrl)
      expect(url.searchParams.get("code_challenge_method")).toBe("S256")
      expect(url.searchParams.get("scope")).toBe("offline_access")

      const callback = yield* promise(() => personSignsIn(gateway.baseUrl, url, {}))
      expect(callback.get("iss")).toBe(gateway.issuer)
      yield* promise(() => first.finishAuth(callback.get("code") ?? "", callback.get("iss") ?? undefined))
      const tokens = provider.tokens()
      expect(tokens?.refresh_token).toEqual(expect.any(String))
      expect(tokens?.scope).toBe("offline_access")

      const client = new Client({ name: "t", version: "1" })
      yield* promise(() =>
        client.connect(new StreamableHTTPClientTransport(new URL(gateway.mcpUrl), { authProvider: provider }))
      )
      const listed = yield* promise(() => client.listTools())
      expect(listed.tools.map((tool) => tool.name)).toEqual(["alpha__echo"])

      // Disabling the person denies the very next request, long before the token expires.
      const users = yield* inGateway(gateway)(UserRepo)
      yield* users.setStatus(callerOf(tokens?.access_token ?? "").subject, "disabled", new Date())
      const denied = yield* promise(() =>
        fetch(gateway.mcpUrl, {
          method: "POST",
          headers: {
            authorization: `Bearer ${tokens?.access_token}`,
            "content-type": "application/json",
            accept: "application/json, text/event-stream"
          },
          body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "tools/list", params: {} })
        })
      )
      expect(denied.status).toBe(401)
      yield* promise(() => client.close())
    })
  )

  it.scopedLive("@modelcontextprotocol/sdk 1.x: the same discovery and sign-in, then tools/list", () =>
    Effect.gen(function* () {
      const gateway = yield* gatewayWithBackend
      const provider = new MemoryOAuthProvider("http://localhost:47002/callback", gateway.issuer)
      const first = new TransportV1(new URL(gateway.mcpUrl), { authProvider: provider })
      const refused = yield* promise(() =>
        new ClientV1({ name: "t", version: "1" }).connect(first).then(
          () => "connected",
          (error: unknown) => String(error)
        )
      )
      expect(refused).toContain("Unauthorized")
      const callback = yield* promise(() => personSignsIn(gateway.baseUrl, provider.authorizationUrl, {}))
      yield* promise(() => first.finishAuth(callback.get("code") ?? ""))
      const client = new ClientV1({ name: "t", version: "1" })
      yield* promise(() => client.connect(new TransportV1(new URL(gateway.mcpUrl), { authProvider: provider })))
      const listed = yield* promise(() => client.listTools())
      expect(listed.tools.length).toBeGreaterThan(0)
      yield* promise(() => client.close())
    })
  )
})
