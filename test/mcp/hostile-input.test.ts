/**
 * Hostile input on /mcp answered precisely (issue: hardening, item 6; docs/mcp.md, "Errors"): a caller's
 * string is echoed at most as a short prefix; invalid parameters are -32602 with a concise message;
 * a backend's own JSON-RPC error reaches the caller with its code and message; an exposed resource URI
 * with dot segments or other ambiguous forms is refused and never forwarded.
 */
import { connect } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { alphaTools, startBackend, type TestBackend } from "../support/mcp-backends.js"
import { jsonRpcOf, rawPost } from "../support/mcp-clients.js"
import { startTestGateway, type TestGateway } from "../support/mcp-gateway.js"

let alpha: TestBackend
let bare: TestBackend
let gateway: TestGateway
beforeAll(async () => {
  alpha = await startBackend("alpha", alphaTools)
  // A backend with tools only: it has no resources/read and answers -32601 for it.
  bare = await startBackend("bare", (server, _aborted) => {
    server.registerTool("noop", {}, async () => ({ content: [] }))
  })
  gateway = await startTestGateway({
    adminListener: true,
    patch: {
      backends: [
        { id: "alpha", url: alpha.url, allow_insecure_http: true, tool_rules: [{ tools: ["*"] }] },
        { id: "bare", url: bare.url, allow_insecure_http: true, tool_rules: [{ tools: ["*"] }] }
      ]
    }
  })
})
afterAll(async () => {
  await gateway?.close()
  await alpha?.stop()
  await bare?.stop()
})

const call = async (method: string, params: unknown, headers: Record<string, string> = {}) => {
  const response = await rawPost(gateway.mcpUrl, JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }), {
    "mcp-protocol-version": "2025-11-25",
    authorization: `Bearer ${await gateway.token()}`,
    ...headers
  })
  const text = await response.clone().text()
  return { message: await jsonRpcOf(response), size: text.length }
}

/**
 * Sends `head` (header lines, CRLF-joined) and `body` over a fresh socket; the status and body of the
 * answer, read until the server closes the connection (`Connection: close` or a refusal).
 */
const rawExchange = (url: string, head: ReadonlyArray<string>, body: string, method = "POST") =>
  new Promise<{ status: number; body: string }>((resolve, reject) => {
    const { hostname, port, pathname } = new URL(url)
    const socket = connect(Number(port), hostname)
    let answer = ""
    socket.setEncoding("utf8")
    socket.on("data", (chunk: string) => (answer += chunk))
    socket.on("error", reject)
    socket.on("close", () => {
      const [top = "", ...rest] = answer.split("\r\n\r\n")
      resolve({ status: Number(top.split(" ")[1]), body: rest.join("\r\n\r\n") })
    })
    const lines = [`${method} ${pathname} HTTP/1.1`, ...head, `Content-Length: ${Buffer.byteLength(body)}`, "", body]
    socket.write(lines.join("\r\n"))
  })

const errorOf = (message: Record<string, unknown>) => message["error"] as { code: number; message: string } | undefined

describe("hostile input on /mcp", () => {
  it("a 4 MiB tool name is answered -32602 echoing only a short prefix (both paths)", async () => {
    const name = "x".repeat(4 * 1024 * 1024 - 200)
    for (const meta of [{}, { _meta: { "com.example/trace": "sdk-path" } }]) {
      const { message, size } = await call("tools/call", { name, arguments: {}, ...meta })
      expect(errorOf(message)?.code).toBe(-32602)
      expect(errorOf(message)?.message).toMatch(/^Unknown tool: x{1,100}…$/)
      expect(size).toBeLessThan(1_000)
    }
  })

  it("an unknown prompt or resource with a huge name is echoed as a short prefix too", async () => {
    const prompt = await call("prompts/get", { name: "p".repeat(100_000) })
    expect(errorOf(prompt.message)?.code).toBe(-32602)
    expect(prompt.size).toBeLessThan(1_000)
    const resource = await call("resources/read", { uri: `gateway://nowhere/${"r".repeat(100_000)}` })
    // Resource not found: -32602 in the 2025-11-25 revision (the MCP SDK maps the older -32002).
    expect(errorOf(resource.message)?.code).toBe(-32602)
    expect(resource.size).toBeLessThan(1_000)
  })

  it("prompts/get with non-string arguments is -32602 with a concise message", async () => {
    const { message, size } = await call("prompts/get", { name: "alpha__greeting", arguments: { name: 42 } })
    expect(errorOf(message)).toEqual({
      code: -32602,
      message: "Invalid params for prompts/get: arguments.name must be a string"
    })
    expect(size).toBeLessThan(300)
    const notObject = await call("prompts/get", { name: "alpha__greeting", arguments: ["a"] })
    expect(errorOf(notObject.message)?.message).toBe("Invalid params for prompts/get: arguments must be an object")
  })

  it("a list request's cursor that is not a string is -32602 naming it (every list method); params may be left out", async () => {
    for (const method of ["tools/list", "prompts/list", "resources/list", "resources/templates/list"]) {
      for (const cursor of [123, null, { a: 1 }, ["x"]]) {
        const { message, size } = await call(method, { cursor })
        expect(errorOf(message), `${method} ${JSON.stringify(cursor)}`).toEqual({
          code: -32602,
          message: `Invalid params for ${method}: cursor must be a string`
        })
        expect(size).toBeLessThan(300)
      }
      const noParams = await call(method, undefined)
      expect(errorOf(noParams.message), method).toBeUndefined()
      expect(noParams.message["result"], method).toBeDefined()
    }
    expect(errorOf((await call("tools/list", "x")).message)?.message).toBe(
      "Invalid params for tools/list: params must be an object"
    )
  })

  it("a body that is not UTF-8 is 400 and a charset other than UTF-8 is 415: never read with bytes replaced", async () => {
    const headers = {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2025-11-25",
      authorization: `Bearer ${await gateway.token()}`
    }
    const body =
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"\xff\xfe\xc0\xaf"}}}'
    const latin1 = await fetch(gateway.mcpUrl, { method: "POST", headers, body: Buffer.from(body, "latin1") })
    expect(latin1.status).toBe(400)
    expect(await latin1.json()).toMatchObject({
      error: "invalid_request",
      error_description: "The request body is not valid UTF-8."
    })
    const utf16 = await fetch(gateway.mcpUrl, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json; charset=utf-16" },
      body: '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}'
    })
    expect(utf16.status).toBe(415)
    expect(await utf16.json()).toMatchObject({
      error: "unsupported_media_type",
      error_description:
        "POST /mcp takes Content-Type: application/json in UTF-8: the body is read as UTF-8 only (charset=utf-16 given)."
    })
    // Every charset the header names counts, wherever it stands: a proxy in front may read any of them.
    for (const type of [
      "application/json;charset=utf-8;charset=utf-16",
      "application/json; charset*=utf-16''",
      'application/json; x="a;charset=utf-8"; charset=utf-16',
      "application/json; charset=utf-8 , utf-16"
    ]) {
      const refused = await fetch(gateway.mcpUrl, {
        method: "POST",
        headers: { ...headers, "content-type": type },
        body: '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}'
      })
      expect(refused.status, type).toBe(415)
    }
    for (const charset of ["UTF-8", '"utf8"', "us-ascii", ""]) {
      const readable = await fetch(gateway.mcpUrl, {
        method: "POST",
        headers: { ...headers, "content-type": `application/json; charset=${charset}` },
        body: '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}'
      })
      expect(readable.status, charset).toBe(200)
    }
  })

  it("a request repeating a single-valued header (Authorization, Content-Type, Host, Mcp-*) is refused 400 whole", async () => {
    const { host } = new URL(gateway.mcpUrl)
    const token = await gateway.token()
    const body =
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"hi"}}}'
    const head = [
      `Host: ${host}`,
      "Content-Type: application/json",
      "Accept: application/json, text/event-stream",
      "MCP-Protocol-Version: 2025-11-25",
      `Authorization: Bearer ${token}`
    ]
    const once = await rawExchange(gateway.mcpUrl, [...head, "Connection: close"], body)
    expect(once.status).toBe(200)
    // Node kept the first of two and dropped the other, or joined two Mcp-* values: a proxy in front may
    // have judged the other one.
    for (const [added, shown] of [
      [["Content-Type: text/plain; charset=iso-8859-1"], "Content-Type"],
      [["authorization: Bearer x.y.z"], "Authorization"],
      [["HOST: internal.example"], "Host"],
      [["Mcp-Method: tools/call", "mcp-method: tools/list"], "Mcp-Method"],
      [["Mcp-Name: alpha__echo", "Mcp-Name: alpha__other"], "Mcp-Name"],
      [["mcp-protocol-version: 2026-07-28"], "Mcp-Protocol-Version"],
      [["Mcp-Session-Id: a", "Mcp-Session-Id: b"], "Mcp-Session-Id"]
    ] as const) {
      const second = added.join(" / ")
      const answer = await rawExchange(gateway.mcpUrl, [...head, ...added, "Connection: close"], body)
      expect(answer.status, second).toBe(400)
      expect(JSON.parse(answer.body), second).toEqual({
        error: "invalid_request",
        error_description: `The request carries the ${shown} header more than once; send it once.`
      })
    }
    // Headers that may repeat (Accept, Cookie, X-Forwarded-For) still pass.
    const repeatable = await rawExchange(
      gateway.mcpUrl,
      [
        ...head,
        "Accept: application/json",
        "X-Forwarded-For: 10.0.0.1",
        "X-Forwarded-For: 10.0.0.2",
        "Connection: close"
      ],
      body
    )
    expect(repeatable.status).toBe(200)
    // Every listener reads headers so: the admin listener (Management API, /metrics) too.
    const admin = await rawExchange(
      `${gateway.adminUrl}/api/v1/identities`,
      [`Host: ${new URL(gateway.adminUrl ?? "").host}`, "Authorization: Bearer a.b.c", "Authorization: Bearer d.e.f"],
      "",
      "GET"
    )
    expect(admin.status).toBe(400)
    expect(JSON.parse(admin.body)).toMatchObject({ error: "invalid_request" })
  })

  it("a backend's JSON-RPC error reaches the caller with its own code and message", async () => {
    // The backend's own answer: an unknown resource.
    const missing = await call("resources/read", { uri: "gateway://alpha/note://nothing-here" })
    expect(errorOf(missing.message)).toMatchObject({ code: -32602, data: { uri: "note://nothing-here" } })
    expect(errorOf(missing.message)?.message).toContain("note://nothing-here")
    // A backend without resources answers -32601 (over HTTP 404): its answer, and it is not marked failing.
    const { message } = await call("resources/read", { uri: "gateway://bare/note://x" })
    expect(errorOf(message)).toEqual({ code: -32601, message: "Method not found" })
    const ready = (await (await fetch(`${gateway.baseUrl}/readyz`)).json()) as Record<string, unknown>
    expect(ready["backends_ready"]).toBe(2)
  })

  it("resource URIs with dot segments or ambiguous forms are refused -32602 and never forwarded", async () => {
    const before = alpha.requests.length
    for (const uri of [
      "gateway://alpha/../secret/note://1",
      "gateway://alpha/./note://readme",
      "gateway://alpha/note://notes/../../x",
      "gateway://alpha/note://notes/%2e%2e/x",
      "gateway://alpha/note://notes/%2E%2E%2Fx",
      "gateway://alpha/note://notes\\..\\x",
      "gateway://alpha/note://readme\u0000"
    ]) {
      const { message } = await call("resources/read", { uri })
      expect({ uri, error: errorOf(message) }).toMatchObject({ uri, error: { code: -32602 } })
    }
    expect(alpha.requests.slice(before).filter((request) => request.body.includes("resources/read"))).toEqual([])
    // The plain form still reads.
    const fine = await call("resources/read", { uri: "gateway://alpha/note://readme" })
    expect(fine.message).toHaveProperty("result")
  })
})
