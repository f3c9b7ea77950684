/**
 * /mcp at the HTTP level (docs/mcp.md, "Tokens", "Request limits and errors", "Origins and CORS";
 * docs/errors.md): bearer challenges, metadata documents, origin rules and CORS, and precise
 * answers to bad input, after which the gateway keeps serving.
 */
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { alphaTools, startBackend, type TestBackend } from "../support/mcp-backends.js"
import { jsonRpcOf, rawPost } from "../support/mcp-clients.js"
import { startTestGateway, type TestGateway } from "../support/mcp-gateway.js"
import { revokedSessions } from "../support/tokens.js"

let alpha: TestBackend
let gateway: TestGateway
let unguarded: TestGateway
const appOrigin = "https://app.example.com"
const backendsOf = (backend: TestBackend) => [
  {
    id: "alpha",
    url: backend.url,
    allow_insecure_http: true,
    required_scopes: ["notes:read"],
    tool_rules: [{ tools: ["*"] }]
  }
]

beforeAll(async () => {
  alpha = await startBackend("alpha", alphaTools)
  const backends = backendsOf(alpha)
  gateway = await startTestGateway({ patch: { backends, allowed_origins: [appOrigin] } })
  unguarded = await startTestGateway({ sessionGuard: false, patch: { backends } })
})
afterAll(async () => {
  await gateway?.close()
  await unguarded?.close()
  await alpha?.stop()
})

const list = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} })
const bearer = async (options: Parameters<TestGateway["token"]>[0] = {}) => ({
  authorization: `Bearer ${await gateway.token({ scopes: ["notes:read"], ...options })}`
})
const metadata = () => `${gateway.baseUrl}/.well-known/oauth-protected-resource/mcp`

describe("bearer tokens on /mcp", () => {
  it("no token: 401 with a challenge naming the path-aware metadata", async () => {
    const response = await rawPost(gateway.mcpUrl, list)
    expect(response.status).toBe(401)
    expect(response.headers.get("www-authenticate")).toBe(`Bearer resource_metadata="${metadata()}"`)
    expect(await response.json()).toMatchObject({ error: "unauthorized" })
  })

  it.each([
    ["expired", { expiresInSeconds: 1 }, 1_100],
    ["wrong audience", { audience: "https://elsewhere.example.com/mcp" }, 0],
    ["wrong issuer", { issuer: "https://elsewhere.example.com/sso" }, 0]
  ] as const)("%s token: 401 invalid_token", async (_, options, wait) => {
    const headers = await bearer(options)
    await new Promise((done) => setTimeout(done, wait))
    const response = await rawPost(gateway.mcpUrl, list, headers)
    expect(response.status).toBe(401)
    expect(response.headers.get("www-authenticate")).toMatch(/^Bearer error="invalid_token", .*resource_metadata="/)
  })

  it("a garbled token, a token in the query and a non-bearer scheme are refused", async () => {
    expect((await rawPost(gateway.mcpUrl, list, { authorization: "Bearer not.a.jwt" })).status).toBe(401)
    expect((await rawPost(gateway.mcpUrl, list, { authorization: "Basic dXNlcjpwYXNz" })).status).toBe(401)
    const token = (await bearer()).authorization.slice(7)
    expect((await rawPost(`${gateway.mcpUrl}?access_token=${token}`, list)).status).toBe(401)
  })

  it("a valid token spelled otherwise (other spare bits, padding added, base64 instead of base64url) is refused: one spelling per token", async () => {
    const token = (await bearer()).authorization.slice(7)
    expect((await rawPost(gateway.mcpUrl, list, { authorization: `Bearer ${token}` })).status).toBe(200)
    const [header, payload, signature] = token.split(".") as [string, string, string]
    const standard = (part: string) => part.replaceAll("-", "+").replaceAll("_", "/")
    const notJwt = "The token is not a JSON Web Token (three base64url parts, no padding)."
    // The signature's last character with other spare bits: the same bytes once decoded.
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    const last = alphabet.indexOf(signature.at(-1)!)
    const spare = signature.length % 4 === 2 ? 0b1111 : 0b11
    const respelled = `${header}.${payload}.${signature.slice(0, -1)}${alphabet[(last & ~spare) | ((last & spare) ^ 1)]}`
    expect(Buffer.from(respelled.split(".")[2]!, "base64url")).toEqual(Buffer.from(signature, "base64url"))
    for (const [spelled, description] of [
      [respelled, notJwt],
      [`${token}==`, notJwt],
      [`${standard(header)}.${standard(payload)}.${standard(signature)}~`, notJwt],
      // Not even RFC 6750's token syntax (`=` only at the end).
      [`${header}=.${payload}.${signature}`, "The Authorization header is not a bearer token."]
    ] as const) {
      const refused = await rawPost(gateway.mcpUrl, list, { authorization: `Bearer ${spelled}` })
      expect(refused.status, spelled).toBe(401)
      expect(refused.headers.get("www-authenticate")).toContain(`error_description="${description}"`)
    }
  })

  it("a revoked session and a gateway without a session store both refuse builtin tokens", async () => {
    revokedSessions.add("revoked-session")
    const revoked = await rawPost(gateway.mcpUrl, list, await bearer({ sessionId: "revoked-session" }))
    expect(revoked.status).toBe(401)
    const token = await unguarded.token({ scopes: ["notes:read"] })
    const response = await rawPost(unguarded.mcpUrl, list, { authorization: `Bearer ${token}` })
    expect(response.status).toBe(401)
  })

  it("a token answered from the caches is refused on its next request once its session is revoked or it expires", async () => {
    // The first request verifies the token and caches its checks; the second is answered from them.
    const revocable = await bearer({ sessionId: "revoked-later" })
    expect((await rawPost(gateway.mcpUrl, list, revocable)).status).toBe(200)
    expect((await rawPost(gateway.mcpUrl, list, revocable)).status).toBe(200)
    revokedSessions.add("revoked-later")
    expect((await rawPost(gateway.mcpUrl, list, revocable)).status).toBe(401)
    const expiring = await bearer({ expiresInSeconds: 2 })
    expect((await rawPost(gateway.mcpUrl, list, expiring)).status).toBe(200)
    // Its `exp` is at most two seconds after minting, in whole seconds.
    await new Promise((done) => setTimeout(done, 2_100))
    const expired = await rawPost(gateway.mcpUrl, list, expiring)
    expect(expired.status).toBe(401)
    expect(expired.headers.get("www-authenticate")).toContain('error_description="The token has expired."')
  })

  it("a request whose token, session and view are cached is decided without asking the session store again", async () => {
    // Counts how each request is decided: `check` is the Effect path, `checkNow` the cached one.
    const asked = { check: 0, checkNow: 0 }
    const counting = await startTestGateway({
      sessionGuard: {
        check: () => Effect.sync(() => void asked.check++),
        checkNow: () => {
          asked.checkNow++
          return true
        }
      },
      patch: { backends: backendsOf(alpha) }
    })
    try {
      const headers = { authorization: `Bearer ${await counting.token({ scopes: ["notes:read"] })}` }
      for (let request = 0; request < 3; request++) {
        expect((await rawPost(counting.mcpUrl, list, headers)).status).toBe(200)
      }
      // The first request verified the token and asked the store; every later decision (two per request
      // when the body comes after the headers) took the cached answers.
      expect(asked.check).toBe(1)
      expect(asked.checkNow).toBeGreaterThanOrEqual(2)
    } finally {
      await counting.close()
    }
  })

  it("a token that opens no backend: 403 insufficient_scope naming the scopes and the metadata", async () => {
    const response = await rawPost(gateway.mcpUrl, list, await bearer({ scopes: ["other"] }))
    expect(response.status).toBe(403)
    expect(response.headers.get("www-authenticate")).toBe(
      `Bearer error="insufficient_scope", scope="notes:read", resource_metadata="${metadata()}"`
    )
  })
})

describe("protected resource metadata", () => {
  it("serves the four RFC 9728 fields at the path-aware address and the root alias", async () => {
    for (const path of ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"]) {
      const response = await fetch(`${gateway.baseUrl}${path}`)
      expect(response.status).toBe(200)
      expect(await response.json()).toEqual({
        resource: gateway.mcpUrl,
        authorization_servers: [`${gateway.baseUrl}/sso`],
        scopes_supported: ["notes:read"],
        bearer_methods_supported: ["header"]
      })
    }
  })

  it("omits scopes_supported when no backend requires a scope (rather than an empty list)", async () => {
    const plain = await startTestGateway({})
    try {
      const metadata = (await (
        await fetch(`${plain.baseUrl}/.well-known/oauth-protected-resource/mcp`)
      ).json()) as object
      expect(metadata).toEqual({
        resource: plain.mcpUrl,
        authorization_servers: [`${plain.baseUrl}/sso`],
        bearer_methods_supported: ["header"]
      })
    } finally {
      await plain.close()
    }
  })
})

describe("origins and CORS", () => {
  it("preflight answers an allowed origin exactly, with POST and the MCP and trace headers", async () => {
    const response = await fetch(gateway.mcpUrl, {
      method: "OPTIONS",
      headers: { origin: appOrigin, "access-control-request-method": "POST" }
    })
    expect(response.status).toBe(204)
    expect(response.headers.get("access-control-allow-origin")).toBe(appOrigin)
    expect(response.headers.get("access-control-allow-methods")).toBe("POST")
    const allowed = response.headers.get("access-control-allow-headers") ?? ""
    for (const header of ["Authorization", "Mcp-Protocol-Version", "Mcp-Method", "Mcp-Name", "traceparent"]) {
      expect(allowed).toContain(header)
    }
  })

  it("refuses other origins: preflight and POST get 403, never a wildcard", async () => {
    const preflight = await fetch(gateway.mcpUrl, {
      method: "OPTIONS",
      headers: { origin: "https://evil.example.com" }
    })
    expect(preflight.status).toBe(403)
    expect(preflight.headers.get("access-control-allow-origin")).toBeNull()
    const post = await rawPost(gateway.mcpUrl, list, { ...(await bearer()), origin: "https://evil.example.com" })
    expect(post.status).toBe(403)
    expect(await post.json()).toMatchObject({ error: "origin_not_allowed" })
  })

  it("allows the gateway's own origin and an allowed origin on POST, with CORS headers", async () => {
    const same = await rawPost(gateway.mcpUrl, list, { ...(await bearer()), origin: gateway.baseUrl })
    expect(same.status).toBe(200)
    const cross = await rawPost(gateway.mcpUrl, list, { ...(await bearer()), origin: appOrigin })
    expect(cross.status).toBe(200)
    expect(cross.headers.get("access-control-allow-origin")).toBe(appOrigin)
  })

  it("GET and DELETE /mcp answer 405 with Allow: POST", async () => {
    for (const method of ["GET", "DELETE"]) {
      const response = await fetch(gateway.mcpUrl, { method })
      expect(response.status).toBe(405)
      expect(response.headers.get("allow")).toBe("POST")
    }
  })
})

describe("bad input gets a precise answer and the gateway keeps serving", () => {
  it.each([
    ["malformed JSON", "{nope", {}, 400, -32700],
    ["a JSON-RPC batch", `[${list},${list}]`, {}, 400, -32600],
    [
      "an unknown method",
      JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/frobnicate", params: {} }),
      {},
      200,
      -32601
    ],
    [
      "invalid params",
      JSON.stringify({ jsonrpc: "2.0", id: 3, method: "tools/call", params: { arguments: {} } }),
      {},
      200,
      -32602
    ]
  ] as const)("%s", async (_, body, extra, status, code) => {
    const response = await rawPost(gateway.mcpUrl, body, { ...(await bearer()), ...extra })
    expect(response.status).toBe(status)
    expect(((await jsonRpcOf(response))["error"] as { code: number }).code).toBe(code)
  })

  it("hostile values: a huge id, arguments nested 100,000 deep, a megabyte-long tool name", async () => {
    const auth = await bearer()
    const call = (id: string, name: string, args: string) =>
      `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":${JSON.stringify(name)},"arguments":${args}}}`
    // 1e400 parses as Infinity: not a JSON-RPC id, so the SDK refuses the message.
    const hugeId = await rawPost(gateway.mcpUrl, call("1e400", "alpha__echo", '{"message":"x"}'), auth)
    expect(hugeId.status).toBe(400)
    expect(((await jsonRpcOf(hugeId))["error"] as { code: number }).code).toBe(-32600)
    // Refused before anything is serialized again for the backend (which could exhaust the stack).
    const deep = `{"a":${"[".repeat(100_000)}${"]".repeat(100_000)}}`
    const nested = await rawPost(gateway.mcpUrl, call("5", "alpha__echo", deep), auth)
    expect((await jsonRpcOf(nested))["error"]).toEqual({
      code: -32602,
      message: "Invalid params: arguments nest deeper than 64 levels"
    })
    const longName = "alpha__" + "x".repeat(1024 * 1024)
    const unknown = await rawPost(gateway.mcpUrl, call("6", longName, "{}"), auth)
    expect(((await jsonRpcOf(unknown))["error"] as { code: number }).code).toBe(-32602)
    // Still serving.
    const after = await rawPost(gateway.mcpUrl, list, auth)
    expect(((await jsonRpcOf(after))["result"] as { tools: Array<unknown> }).tools.length).toBeGreaterThan(0)
  })

  it("wrong content type: 415; oversized body: 413 (limit 4 MiB)", async () => {
    const wrongType = await rawPost(gateway.mcpUrl, list, { ...(await bearer()), "content-type": "text/plain" })
    expect(wrongType.status).toBe(415)
    expect(await wrongType.json()).toMatchObject({ error: "unsupported_media_type" })
    const huge = JSON.stringify({
      jsonrpc: "2.0",
      id: 4,
      method: "tools/call",
      params: { name: "alpha__echo", arguments: { message: "x".repeat(4 * 1024 * 1024) } }
    })
    const tooLarge = await rawPost(gateway.mcpUrl, huge, await bearer())
    expect(tooLarge.status).toBe(413)
    expect(await tooLarge.json()).toMatchObject({ error: "payload_too_large" })
    const after = await rawPost(gateway.mcpUrl, list, await bearer())
    expect(after.status).toBe(200)
    expect(((await jsonRpcOf(after))["result"] as { tools: Array<unknown> }).tools.length).toBeGreaterThan(0)
  })
})
