/**
 * HTTP tool calls through HttpToolsLive against a real HTTPS service (test CA; test/support/https-tool-server.ts):
 * what reaches the service (URL, headers, credentials, body), the bounds (time, size, redirects), the
 * answer mapping, invalid arguments, and that no secret ever comes back in a result or an error.
 */
import type { CallToolResult } from "@modelcontextprotocol/client"
import { Context, Duration, Effect, Exit, Layer, Redacted, Scope } from "effect"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { httpToolsLayer } from "../../../src/sources/http/live.js"
import { HttpToolInvalidArguments, HttpTools } from "../../../src/sources/http/service.js"
import type { HttpEndpoint, HttpToolSpec } from "../../../src/sources/schema.js"
import { type HttpsToolServer, startHttpsToolServer } from "../../support/https-tool-server.js"
import { makeTestCa, type TestCa } from "../../support/test-ca.js"

const headerCanary = "canary-header-7f3e9b2a41"
const tokenCanary = "canary-token-c0ffee5eed1234"
const passwordCanary = "canary-password-9d8c7b6a"

let ca: TestCa
let server: HttpsToolServer
let tools: HttpTools["Type"]
let scope: Scope.CloseableScope

beforeAll(async () => {
  ca = makeTestCa()
  server = await startHttpsToolServer(ca)
  scope = Effect.runSync(Scope.make())
  const context = await Effect.runPromise(Layer.buildWithScope(httpToolsLayer({ ca: ca.caPem }), scope))
  tools = Context.get(context, HttpTools)
})

afterAll(async () => {
  await Effect.runPromise(Scope.close(scope, Exit.void))
  await server.close()
  ca.remove()
})

beforeEach(() => {
  server.requests.length = 0
})

const endpoint = (overrides: Partial<HttpEndpoint> = {}): HttpEndpoint => ({
  kind: "http_tool",
  id: "weather",
  allow_insecure_http: false,
  headers: { "X-Api-Key": Redacted.make(headerCanary) },
  credentials: { type: "bearer", token: Redacted.make(tokenCanary) },
  required_scopes: [],
  tool_rules: [],
  naming: { resource_uris: "gateway" },
  timeouts: { call: Duration.seconds(5) },
  max_answer_bytes: 1024 * 1024,
  tools: [],
  ...overrides
})

const tool = (overrides: Partial<HttpToolSpec> = {}): HttpToolSpec => ({
  name: "echo",
  description: "",
  method: "GET",
  url: `${server.origin}/echo/users/{id}{?q}`,
  input_schema: { type: "object", properties: { id: { type: "string" }, q: { type: "string" } } },
  argument_headers: {},
  ...overrides
})

const call = (
  args: Record<string, unknown> | undefined,
  spec: Partial<HttpToolSpec> = {},
  at: Partial<HttpEndpoint> = {},
  signal: AbortSignal = new AbortController().signal
) => Effect.runPromise(Effect.either(tools.call(endpoint(at), tool(spec), args, signal)))

const result = async (...args: Parameters<typeof call>): Promise<CallToolResult> => {
  const outcome = await call(...args)
  if (outcome._tag === "Left") throw new Error(`refused: ${outcome.left.message}`)
  return outcome.right
}

const textOf = (answer: CallToolResult) =>
  answer.content.map((block) => (block.type === "text" ? block.text : "")).join("\n")

/** No canary in anything a caller gets back. */
const expectNoSecret = (value: unknown) => {
  const text = JSON.stringify(value)
  for (const canary of [
    headerCanary,
    tokenCanary,
    passwordCanary,
    Buffer.from(`u:${passwordCanary}`).toString("base64")
  ])
    expect(text).not.toContain(canary)
}

describe("HTTP tool calls: the request", () => {
  it("sends the expanded URL, the endpoint's fixed header and bearer credentials, and maps the JSON answer", async () => {
    const answer = await result({ id: "a b/../c", q: "x&y=1" })
    expect(server.requests).toHaveLength(1)
    const [received] = server.requests
    expect(received!.target).toBe("/echo/users/a%20b%2F..%2Fc?q=x%26y%3D1")
    expect(received!.headers["x-api-key"]).toBe(headerCanary)
    expect(received!.headers["authorization"]).toBe(`Bearer ${tokenCanary}`)
    expect(answer.isError).toBeUndefined()
    expect(answer.structuredContent).toMatchObject({ method: "GET", path: "/echo/users/a%20b%2F..%2Fc" })
    expect(JSON.parse(textOf(answer))).toEqual(answer.structuredContent)
  })

  it("hostile path values reach the service as one encoded segment of the same origin", async () => {
    const values = ["../../admin", "?x=1#y", "@evil.test", "%2e%2e", "\r\nX-Injected: 1", "日本", "//evil.test/x"]
    for (const value of values) await result({ id: value })
    expect(server.requests.map((request) => request.target.split("?")[0]!.split("/").length)).toEqual(
      values.map(() => 4)
    )
    expect(server.requests.every((request) => request.headers["host"] === `127.0.0.1:${server.port}`)).toBe(true)
    expect(server.requests.every((request) => request.headers["x-injected"] === undefined)).toBe(true)
    expect(server.requests.map((request) => decodeURIComponent(request.target.split("/")[3]!))).toEqual(values)
  })

  it("'..' as a whole segment is refused as invalid arguments and nothing is sent", async () => {
    const outcome = await call({ id: ".." })
    expect(outcome._tag).toBe("Left")
    expect(server.requests).toHaveLength(0)
  })

  it("basic credentials are sent as an Authorization header", async () => {
    await result(
      { id: "1" },
      {},
      { credentials: { type: "basic", username: "u", password: Redacted.make(passwordCanary) } }
    )
    expect(server.requests[0]!.headers["authorization"]).toBe(
      `Basic ${Buffer.from(`u:${passwordCanary}`).toString("base64")}`
    )
  })

  it("a POST sends the body argument as JSON and the argument headers", async () => {
    const answer = await result(
      { id: "7", payload: { name: "n", list: [1, 2] }, trace: "abc-123" },
      {
        method: "POST",
        body: { argument: "/payload" },
        argument_headers: { "X-Trace": "/trace" },
        input_schema: {
          type: "object",
          properties: { id: { type: "string" }, payload: { type: "object" }, trace: { type: "string" } }
        }
      }
    )
    const [received] = server.requests
    expect(received!.method).toBe("POST")
    expect(JSON.parse(received!.body)).toEqual({ name: "n", list: [1, 2] })
    expect(received!.headers["content-type"]).toBe("application/json")
    expect(received!.headers["x-trace"]).toBe("abc-123")
    expect(answer.structuredContent).toMatchObject({ method: "POST" })
  })

  it("an argument header holding CR/LF, NUL or a non-string is refused naming the argument; nothing is sent", async () => {
    const spec = {
      argument_headers: { "X-Trace": "/trace" },
      input_schema: { type: "object", properties: { id: { type: "string" }, trace: {} } }
    }
    for (const trace of ["a\r\nX-Evil: 1", "a\nb", "a\u0000b", "é", 42, { a: 1 }]) {
      const outcome = await call({ id: "1", trace }, spec)
      expect(outcome._tag, JSON.stringify(trace)).toBe("Left")
      if (outcome._tag === "Left") {
        expect(outcome.left).toBeInstanceOf(HttpToolInvalidArguments)
        expect(outcome.left.message).toMatch(/^argument \/trace: /)
      }
    }
    expect(server.requests).toHaveLength(0)
  })

  it("an argument header cannot replace a header the endpoint fixes", async () => {
    const answer = await result(
      { id: "1", key: "mine" },
      { argument_headers: { "x-api-key": "/key" }, input_schema: { type: "object" } }
    )
    expect(answer.isError).toBe(true)
    expect(textOf(answer)).toContain("x-api-key")
    expect(server.requests).toHaveLength(0)
  })

  it("an endpoint whose fixed headers set a framing header sends nothing", async () => {
    const answer = await result({ id: "1" }, {}, { headers: { Host: Redacted.make("evil.test") } })
    expect(answer.isError).toBe(true)
    expect(textOf(answer)).not.toContain("evil.test")
    expect(server.requests).toHaveLength(0)
  })

  it("an http:// tool is refused unless the endpoint allows insecure HTTP", async () => {
    const answer = await result({ id: "1" }, { url: "http://127.0.0.1:1/echo/{id}" })
    expect(answer).toMatchObject({ isError: true })
    expect(textOf(answer)).toContain("allow insecure HTTP")
  })
})

describe("HTTP tool calls: invalid arguments", () => {
  const schema = {
    type: "object",
    properties: {
      id: { type: "string" },
      filter: { type: "object", properties: { limit: { type: "integer", minimum: 1 } }, required: ["limit"] }
    },
    required: ["id"],
    additionalProperties: false
  }

  it.each([
    [{}, "argument /id: is required"],
    [{ id: 5 }, "argument /id: must be string"],
    [{ id: "1", filter: {} }, "argument /filter/limit: is required"],
    [{ id: "1", filter: { limit: 0 } }, "argument /filter/limit: must be >= 1"],
    [{ id: "1", extra: true }, "argument /extra: is not allowed"]
  ])("%j is refused with the argument's path (%s) and nothing is sent", async (args, message) => {
    const outcome = await call(args, { input_schema: schema })
    expect(outcome).toMatchObject({ _tag: "Left", left: { _tag: "HttpToolInvalidArguments", message } })
    expect(server.requests).toHaveLength(0)
  })

  it("a draft-07 schema is validated as draft-07", async () => {
    const draft07 = {
      $schema: "http://json-schema.org/draft-07/schema#",
      type: "object",
      definitions: { id: { type: "string", pattern: "^[0-9]+$" } },
      properties: { id: { $ref: "#/definitions/id" } }
    }
    expect(await call({ id: "abc" }, { input_schema: draft07 })).toMatchObject({
      _tag: "Left",
      left: { message: 'argument /id: must match pattern "^[0-9]+$"' }
    })
    expect((await call({ id: "12" }, { input_schema: draft07 }))._tag).toBe("Right")
  })

  it("no arguments at all are validated as {}", async () => {
    const outcome = await call(undefined, { input_schema: schema })
    expect(outcome).toMatchObject({ _tag: "Left", left: { message: "argument /id: is required" } })
  })
})

describe("HTTP tool calls: bounds", () => {
  it("a slow answer fails at the endpoint's call timeout", async () => {
    const started = performance.now()
    const answer = await result(
      {},
      { url: `${server.origin}/slow?ms=5000`, input_schema: { type: "object" } },
      { timeouts: { call: Duration.millis(300) } }
    )
    const took = performance.now() - started
    expect(answer.isError).toBe(true)
    expect(textOf(answer)).toBe("the service did not answer within 300 ms")
    expect(took).toBeLessThan(2000)
  })

  it("a body that trickles for ever fails at the call timeout too", async () => {
    const answer = await result(
      {},
      { url: `${server.origin}/trickle`, input_schema: { type: "object" } },
      { timeouts: { call: Duration.millis(400) } }
    )
    expect(textOf(answer)).toBe("the service did not answer within 400 ms")
  })

  it("a huge chunked answer stops being read past max_answer_bytes", async () => {
    const answer = await result(
      {},
      { url: `${server.origin}/huge?bytes=${64 * 1024 * 1024}`, input_schema: { type: "object" } },
      { max_answer_bytes: 100_000 }
    )
    expect(answer.isError).toBe(true)
    expect(textOf(answer)).toContain("larger than 100000 bytes")
  })

  it("an answer whose content-length passes max_answer_bytes is refused before its body is read", async () => {
    const answer = await result(
      {},
      { url: `${server.origin}/huge-declared?bytes=5000000`, input_schema: { type: "object" } },
      { max_answer_bytes: 1000 }
    )
    expect(textOf(answer)).toContain("larger than 1000 bytes")
  })

  it("an answer of exactly max_answer_bytes is read", async () => {
    const answer = await result(
      {},
      { url: `${server.origin}/huge?bytes=1000`, input_schema: { type: "object" } },
      { max_answer_bytes: 1000 }
    )
    expect(answer.isError).toBeUndefined()
    expect(textOf(answer)).toHaveLength(1000)
  })

  it("a HEAD answer declaring more than max_answer_bytes is not refused: it has no body", async () => {
    const answer = await result(
      {},
      { url: `${server.origin}/huge-declared?bytes=5000000`, method: "HEAD", input_schema: { type: "object" } },
      { max_answer_bytes: 1000 }
    )
    expect(answer).toEqual({ content: [{ type: "text", text: "HTTP 200 (no content)" }] })
  })

  it("the caller's cancellation stops the request", async () => {
    const controller = new AbortController()
    setTimeout(() => controller.abort(), 100)
    const answer = await result(
      {},
      { url: `${server.origin}/slow?ms=5000`, input_schema: { type: "object" } },
      {},
      controller.signal
    )
    expect(textOf(answer)).toBe("the call was cancelled")
  })
})

describe("HTTP tool calls: redirects", () => {
  const at = (url: string) => ({ url: `${server.origin}${url}`, input_schema: { type: "object" } })

  it("a redirect within the origin is followed", async () => {
    const answer = await result({}, at("/redirect/same?to=/echo/landed"))
    expect(answer.structuredContent).toMatchObject({ path: "/echo/landed" })
    expect(server.requests.map((request) => request.target)).toEqual(["/redirect/same?to=/echo/landed", "/echo/landed"])
  })

  it("a redirect to another origin is refused and never followed", async () => {
    const answer = await result({}, at("/redirect/other"))
    expect(answer.isError).toBe(true)
    expect(textOf(answer)).toBe(
      `the service redirected to another origin (https://localhost:${server.port}); not followed`
    )
    expect(server.requests).toHaveLength(1)
  })

  it("a redirect from https to http on the same host is another origin", async () => {
    const answer = await result(
      {},
      at(`/redirect/other?to=${encodeURIComponent(`http://127.0.0.1:${server.port}/echo/x`)}`)
    )
    expect(textOf(answer)).toContain("redirected to another origin")
    expect(server.requests).toHaveLength(1)
  })

  it("a 303 after a POST continues with a GET without the body", async () => {
    const answer = await result(
      { payload: { a: 1 } },
      { ...at("/redirect/see-other"), method: "POST", body: { argument: "/payload" } }
    )
    expect(answer.structuredContent).toMatchObject({ method: "GET", path: "/echo/after-303", body: "" })
  })

  it("more than 3 redirects fail the call", async () => {
    const answer = await result({}, at("/redirect/loop"))
    expect(textOf(answer)).toBe("the service redirected more than 3 times")
    expect(server.requests).toHaveLength(4)
  })
})

describe("HTTP tool calls: answers", () => {
  const at = (url: string, method: HttpToolSpec["method"] = "GET") => ({
    url: `${server.origin}${url}`,
    method,
    input_schema: { type: "object" }
  })

  it("text is a text block; a JSON array is text without structuredContent", async () => {
    expect(await result({}, at("/text"))).toEqual({ content: [{ type: "text", text: "plain words ✓" }] })
    expect(await result({}, at("/array"))).toEqual({ content: [{ type: "text", text: '[1,"two",{"three":3}]' }] })
  })

  it("an image is an image block; other binary types are refused", async () => {
    const image = await result({}, at("/image"))
    expect(image.content[0]).toMatchObject({ type: "image", mimeType: "image/png" })
    const binary = await result({}, at("/binary"))
    expect(binary).toMatchObject({ isError: true })
    expect(textOf(binary)).toBe(
      "the service answered application/octet-stream (5 bytes), which an HTTP tool does not pass on"
    )
  })

  it("an untyped body is text when it is UTF-8, refused otherwise", async () => {
    expect(textOf(await result({}, at("/no-type")))).toBe("untyped words")
    expect(await result({}, at("/no-type?binary=1"))).toMatchObject({ isError: true })
  })

  it("JSON that does not parse is an error result", async () => {
    expect(await result({}, at("/bad-json"))).toMatchObject({ isError: true })
  })

  it("a HEAD answer says its status", async () => {
    expect(await result({}, at("/echo/x", "HEAD"))).toEqual({
      content: [{ type: "text", text: "HTTP 200 (no content)" }]
    })
  })

  it.each([400, 404, 500, 503])(
    "status %i is an error result with a bounded, cleaned excerpt and no secret",
    async (status) => {
      const answer = await result({}, at(`/status/${status}`))
      expect(answer.isError).toBe(true)
      const text = textOf(answer)
      expect(text.startsWith(`HTTP ${status}: error page`)).toBe(true)
      expect(text).toContain("[redacted]")
      for (const control of ["\u0000", "\u001b", "\r"]) expect(text).not.toContain(control)
      expectNoSecret(answer)
    }
  )

  it("a connection refused is an error result naming the origin only", async () => {
    const answer = await result({ q: "secret-query" }, { url: "https://127.0.0.1:1/x{?q}" })
    expect(textOf(answer)).toBe("could not reach https://127.0.0.1:1 (ECONNREFUSED)")
  })
})

describe("HTTP tool calls: secrets never come back (canary scan)", () => {
  it("an echoed request (headers, credentials) is scrubbed in the text and in structuredContent", async () => {
    for (const credentials of [
      { type: "bearer" as const, token: Redacted.make(tokenCanary) },
      { type: "basic" as const, username: "u", password: Redacted.make(passwordCanary) }
    ]) {
      const answer = await result({ id: "1" }, {}, { credentials })
      expect(JSON.stringify(answer)).toContain("[redacted]")
      expectNoSecret(answer)
    }
  })

  it("an echo that writes the secrets as JSON \\u escapes is scrubbed too", async () => {
    const answer = await result({}, { url: `${server.origin}/echo-escaped`, input_schema: { type: "object" } })
    expect(answer.structuredContent).toMatchObject({
      headers: { authorization: "Bearer [redacted]", "x-api-key": "[redacted]" }
    })
    expectNoSecret(answer)
  })

  it("no failure message carries a secret or the query string", async () => {
    const failures = [
      await call({ id: "..", q: "query-canary" }),
      await call(
        {},
        { url: `${server.origin}/slow?ms=5000&k=query-canary`, input_schema: { type: "object" } },
        { timeouts: { call: Duration.millis(200) } }
      ),
      await call({}, { url: `${server.origin}/redirect/other?k=query-canary`, input_schema: { type: "object" } }),
      await call(
        {},
        { url: `${server.origin}/huge?bytes=100000&k=query-canary`, input_schema: { type: "object" } },
        { max_answer_bytes: 10 }
      ),
      await call({}, { url: `https://127.0.0.1:1/x?k=query-canary`, input_schema: { type: "object" } }),
      await call({ id: 5 }, { input_schema: { type: "object", properties: { id: { type: "string" } } } })
    ]
    for (const failure of failures) {
      expectNoSecret(failure)
      expect(JSON.stringify(failure)).not.toContain("query-canary")
    }
  })

  it("a service with an untrusted certificate fails verification (nothing disables it)", async () => {
    const other = makeTestCa("another CA")
    const stranger = await startHttpsToolServer(other)
    try {
      const answer = await result({}, { url: `${stranger.origin}/echo/x`, input_schema: { type: "object" } })
      expect(answer.isError).toBe(true)
      expect(textOf(answer)).toMatch(/failed verification \([A-Z_]+\)$/)
      expect(stranger.requests).toHaveLength(0)
    } finally {
      await stranger.close()
      other.remove()
    }
  })
})
