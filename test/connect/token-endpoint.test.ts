/**
 * `gateway connect` and token endpoints that misbehave (docs/clients.md, "The bridge"): an answer
 * without `expires_in` gets the default 5-minute lifetime (one refresh, not a loop); a malformed grant is
 * refused with a message saying what is wrong; a redirect is refused rather than followed; an answer
 * larger than 64 KiB is refused. Each token endpoint is a real HTTP server.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { writeCredentials } from "../../src/connect/credentials.js"
import type { GatewayEndpoints } from "../../src/connect/discovery.js"
import { ANSWER_LIMIT_BYTES } from "../../src/connect/fetch-json.js"
import { DEFAULT_TOKEN_LIFETIME_SECONDS, TokenRequestFailed, tokenRequest } from "../../src/connect/token-endpoint.js"
import { TokenSource } from "../../src/connect/token-source.js"
import { json, type ScriptedServer, scriptedServer } from "../support/scripted-server.js"

const cleanup: Array<() => Promise<void> | void> = []
afterAll(async () => {
  for (const step of cleanup) await step()
})

/** A token endpoint answering every POST with `grant` (a new access token each time when it has one). */
const tokenEndpoint = async (grant: (count: number) => unknown): Promise<ScriptedServer> => {
  const server = await scriptedServer((_, response) => json(response, grant(server.requests.length)))
  cleanup.push(() => server.close())
  return server
}

/** A TokenSource with a stored sign-in for the gateway at `origin`, on a clock the test moves. */
const signedIn = (origin: string, clock: { now: number }) => {
  const dir = mkdtempSync(join(tmpdir(), "gateway-connect-"))
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }))
  const endpoints: GatewayEndpoints = {
    resource: `${origin}/mcp`,
    issuer: `${origin}/sso`,
    authorizationEndpoint: `${origin}/sso/authorize`,
    tokenEndpoint: `${origin}/sso/token`,
    scopes: [],
    issParameterSupported: true
  }
  const file = join(dir, "credentials.json")
  writeCredentials(file, {
    version: 1,
    resource: endpoints.resource,
    issuer: endpoints.issuer,
    client_id: "cli",
    refresh_token: "stored-refresh-token",
    saved_at: new Date().toISOString()
  })
  return new TokenSource({
    endpoints,
    clientId: "cli",
    credentialsFile: file,
    refreshMarginSeconds: 60,
    say: () => {},
    now: () => clock.now,
    signIn: () => Promise.reject(new Error("no browser in this test"))
  })
}

describe("gateway connect: token endpoint answers", () => {
  it("an answer without expires_in lives the default 5 minutes: one refresh, then the same token until then", async () => {
    const server = await tokenEndpoint((count) => ({ access_token: `access-${count}`, token_type: "bearer" }))
    const clock = { now: Date.now() }
    const tokens = signedIn(server.origin, clock)
    const first = await tokens.token()
    expect(await Promise.all([tokens.token(), tokens.token(), tokens.token()])).toEqual([first, first, first])
    expect(server.requests).toHaveLength(1)
    // Renewed a minute before the default lifetime ends.
    clock.now += (DEFAULT_TOKEN_LIFETIME_SECONDS - 61) * 1000
    expect(await tokens.token()).toBe(first)
    clock.now += 2000
    expect(await tokens.token()).not.toBe(first)
    expect(server.requests).toHaveLength(2)
    expect(DEFAULT_TOKEN_LIFETIME_SECONDS).toBe(300)
  })

  it.each([
    ["expires_in as text", { access_token: "a", token_type: "Bearer", expires_in: "3600" }, /expires_in/],
    ["expires_in zero", { access_token: "a", token_type: "Bearer", expires_in: 0 }, /expires_in/],
    ["expires_in negative", { access_token: "a", token_type: "Bearer", expires_in: -5 }, /expires_in/],
    ["an empty access token", { access_token: "", token_type: "Bearer", expires_in: 600 }, /access_token/],
    ["no access token", { token_type: "Bearer", expires_in: 600 }, /access_token/],
    ["another token type", { access_token: "a", token_type: "DPoP", expires_in: 600 }, /token_type/],
    ["no token type", { access_token: "a", expires_in: 600 }, /token_type/],
    ["an empty refresh token", { access_token: "a", token_type: "Bearer", refresh_token: "" }, /refresh_token/],
    ["not an object", ["access_token"], /not a JSON object/]
  ])("refuses a grant with %s, saying what is wrong", async (_, grant, problem) => {
    const server = await tokenEndpoint(() => grant)
    const refused = await signedIn(server.origin, { now: Date.now() })
      .token()
      .then(
        () => undefined,
        (error: unknown) => error
      )
    expect(refused).toBeInstanceOf(TokenRequestFailed)
    expect((refused as TokenRequestFailed).message).toMatch(/^the token endpoint's answer is not a usable grant: /)
    expect((refused as TokenRequestFailed).message).toMatch(problem)
    expect(server.requests).toHaveLength(1)
  })

  it("refuses a token endpoint that redirects, without following it", async () => {
    const server = await scriptedServer((request, response, origin) => {
      if (request.path === "/sso/token") response.writeHead(307, { location: `${origin}/elsewhere` }).end()
      else json(response, { access_token: "a", token_type: "Bearer", expires_in: 600 })
    })
    cleanup.push(() => server.close())
    await expect(tokenRequest(`${server.origin}/sso/token`, { grant_type: "refresh_token" })).rejects.toThrow(
      /^the token endpoint did not answer: it answered with a redirect/
    )
    expect(server.requests.map((request) => request.path)).toEqual(["/sso/token"])
  })

  it("refuses a token answer larger than 64 KiB, read as it streams in", async () => {
    const server = await scriptedServer((_, response) => {
      response.writeHead(200, { "content-type": "application/json" })
      response.write('{"access_token":"a","token_type":"Bearer","padding":"')
      // Valid JSON all the same, 64 times the limit, in chunks.
      let written = 0
      const more = () => {
        while (written < 64 * ANSWER_LIMIT_BYTES) {
          written += 4096
          if (!response.write("x".repeat(4096))) return void response.once("drain", more)
        }
        response.end('"}')
      }
      more()
    })
    cleanup.push(() => server.close())
    const refused = await tokenRequest(`${server.origin}/sso/token`, { grant_type: "refresh_token" }).then(
      () => undefined,
      (error: unknown) => error
    )
    expect(refused).toBeInstanceOf(TokenRequestFailed)
    expect((refused as TokenRequestFailed).message).toBe(
      "the token endpoint did not answer: the answer is larger than 64 KiB"
    )
  })
})
