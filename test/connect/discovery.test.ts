/**
 * `gateway connect`'s discovery against gateways that misbehave (docs/clients.md, "The bridge"): an
 * authorization endpoint a command line or an opener could misread is refused; the endpoints used are
 * the serialized (WHATWG) addresses; a metadata answer that redirects, or is larger than 64 KiB (with or
 * without Content-Length), is refused. Each gateway is a real HTTP server serving hostile documents.
 */
import { afterAll, describe, expect, it } from "vitest"
import { DiscoveryFailed, discover } from "../../src/connect/discovery.js"
import { ANSWER_LIMIT_BYTES } from "../../src/connect/fetch-json.js"
import { gatewayMetadata, json, type ScriptedServer, scriptedServer } from "../support/scripted-server.js"

const servers: Array<ScriptedServer> = []
afterAll(async () => {
  for (const server of servers) await server.close()
})

/** A gateway whose authorization server metadata has `server` members of its own. */
const gatewayWith = async (server: (origin: string) => Record<string, unknown>) => {
  const gateway = await scriptedServer((request, response, origin) => {
    const body = gatewayMetadata(origin, request.path, server(origin))
    if (body === undefined) response.writeHead(404).end()
    else json(response, body)
  })
  servers.push(gateway)
  return gateway
}

const refusal = (address: string) =>
  discover(address).then(
    () => undefined,
    (error: unknown) => error
  )

describe("gateway connect: discovery", () => {
  it.each([
    ["an environment variable for cmd.exe", "/sso/authorize?next=%USERPROFILE%"],
    ["a pipe", "/sso/authorize?a=1|calc.exe"],
    ["a caret", "/sso/auth^orize"],
    ["a double quote", '/sso/authorize?a="b'],
    ["angle brackets", "/sso/authorize?a=<b>"],
    ["a backtick", "/sso/authorize?a=`id`"],
    ["a space", "/sso/authorize?a=b c"],
    ["a tab", "/sso/authorize?a=b\tc"]
  ])("refuses an authorization endpoint with %s in it", async (_, path) => {
    const gateway = await gatewayWith((origin) => ({ authorization_endpoint: `${origin}${path}` }))
    const error = await refusal(`${gateway.origin}/mcp`)
    expect(error).toBeInstanceOf(DiscoveryFailed)
    expect((error as DiscoveryFailed).message).toMatch(/^The authorization endpoint contains characters/)
  })

  it("uses the serialized addresses of well-formed endpoints, and notes that answers name their issuer", async () => {
    const gateway = await gatewayWith((origin) => ({
      authorization_endpoint: `${origin.replace("http:", "HTTP:")}/sso/./authorize?tenant=caf%C3%A9&x=é`,
      token_endpoint: `${origin}/sso/token`
    }))
    const endpoints = await discover(`${gateway.origin}/mcp`)
    expect(endpoints.authorizationEndpoint).toBe(`${gateway.origin}/sso/authorize?tenant=caf%C3%A9&x=%C3%A9`)
    expect(endpoints.tokenEndpoint).toBe(`${gateway.origin}/sso/token`)
    expect(endpoints.issParameterSupported).toBe(true)
  })

  it("refuses metadata that answers with a redirect instead of following it", async () => {
    const gateway = await scriptedServer((request, response, origin) => {
      if (request.path.startsWith("/.well-known/oauth-authorization-server")) {
        response.writeHead(302, { location: `${origin}/elsewhere` }).end()
      } else {
        const body = gatewayMetadata(origin, request.path)
        if (body === undefined) response.writeHead(404).end()
        else json(response, body)
      }
    })
    servers.push(gateway)
    const error = await refusal(`${gateway.origin}/mcp`)
    expect(error).toBeInstanceOf(DiscoveryFailed)
    expect((error as DiscoveryFailed).message).toMatch(/did not answer: it answered with a redirect/)
    expect(gateway.requests.map((request) => request.path)).not.toContain("/elsewhere")
  })

  it.each([
    ["with Content-Length", true],
    ["streamed without Content-Length", false]
  ])("refuses a metadata document larger than 64 KiB (%s)", async (_, declared) => {
    const gateway = await scriptedServer((request, response, origin) => {
      const body = gatewayMetadata(origin, request.path)
      if (body === undefined) return response.writeHead(404).end()
      if (!request.path.includes("authorization-server")) return json(response, body)
      // Valid JSON all the same: padded with whitespace past the limit.
      const text = `${JSON.stringify(body)}${" ".repeat(ANSWER_LIMIT_BYTES)}`
      if (declared) {
        response.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(text) })
        response.end(text)
      } else {
        response.writeHead(200, { "content-type": "application/json" })
        for (let at = 0; at < text.length; at += 8192) response.write(text.slice(at, at + 8192))
        response.end()
      }
    })
    servers.push(gateway)
    const error = await refusal(`${gateway.origin}/mcp`)
    expect(error).toBeInstanceOf(DiscoveryFailed)
    expect((error as DiscoveryFailed).message).toMatch(/did not answer: the answer is larger than 64 KiB/)
  })
})
