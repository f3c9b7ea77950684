/**
 * The save-time checks of an HTTP tool (checkHttpTool, src/sources/http/check.ts): what the Management
 * API and the OpenAPI importer refuse before a tool is stored, each problem with the JSON Pointer at fault.
 */
import { describe, expect, it } from "vitest"
import { checkEndpointHeaders, checkHttpTool } from "../../../src/sources/http/check.js"
import type { HttpToolSpec } from "../../../src/sources/schema.js"

const spec = (overrides: Partial<HttpToolSpec> = {}): HttpToolSpec => ({
  name: "get_user",
  description: "",
  method: "GET",
  url: "https://api.example.test/users/{id}{?fields}",
  input_schema: { type: "object", properties: { id: { type: "string" }, fields: { type: "string" } } },
  argument_headers: {},
  ...overrides
})

const secure = { allow_insecure_http: false }

describe("checkHttpTool", () => {
  it("a well-formed tool has no problem", () => {
    expect(checkHttpTool(secure, spec())).toEqual([])
    expect(
      checkHttpTool(
        secure,
        spec({
          method: "POST",
          url: "https://api.example.test:8443/v1/items{/kind}?fixed=1{&tags*}",
          body: { argument: "/item" },
          argument_headers: { "X-Request-Id": "/request_id" },
          input_schema: { $schema: "http://json-schema.org/draft-07/schema#", type: "object" }
        })
      )
    ).toEqual([])
  })

  it.each([
    ["https://api.example.test{/id}", "an expression before the path"],
    ["https://api.example.test{id}/x", "an expression before the path"],
    ["https://{host}/x", "an expression before the path"],
    ["{scheme}://api.example.test/x", "expected an absolute https:// URL"],
    ["/relative/{id}", "expected an absolute https:// URL"],
    ["ftp://api.example.test/x", "expected an absolute https:// URL"],
    ["https://user@api.example.test/x", "user information"],
    ["https://api.example.test/{+path}", "reserved expansion"],
    ["https://api.example.test/x{#frag}", "fragment expansion"],
    ["https://api.example.test/x{.ext}", "label expansion"],
    ["https://api.example.test/x{;p}", "path-style parameters"],
    ["https://api.example.test/x/{id:3}", "prefix modifiers"],
    ["https://api.example.test/x/{ids*}", "only query expressions"],
    ["https://api.example.test/x/{id", "without its '}'"],
    ["https://api.example.test/x/{a}/b}", "without its '{'"],
    ["https://api.example.test/x/{}", "an empty expression"],
    ["https://api.example.test/x/{a-b}", "is not a variable name"],
    ["https://api.example.test/x#top", "a fragment"],
    ["https://api.example.test/x/../admin", "'.' or '..' segment"],
    ["https://api.example.test/x/%2e%2e/admin", "'.' or '..' segment"],
    ["https://api.example.test/a b", "must be percent-encoded"],
    ["https://api.example.test/x{?a}{?b}", "after the query began"],
    ["https://api.example.test/x{&a}", "before the query began"],
    ["https://api.example.test/x{?a}/more", "text after a {?…} expression"],
    ["https://api.example.test/x?q=1{/a}", "a path expression"]
  ])("the template %s is refused (%s)", (url, message) => {
    const problems = checkHttpTool(secure, spec({ url, input_schema: { type: "object" } }))
    expect(problems).toEqual([{ pointer: "/url", message: expect.stringContaining(message) }])
  })

  it("http:// needs allow_insecure_http", () => {
    const url = "http://127.0.0.1:8080/x/{id}"
    expect(checkHttpTool(secure, spec({ url }))).toEqual([
      { pointer: "/url", message: expect.stringContaining("allow_insecure_http") }
    ])
    expect(checkHttpTool({ allow_insecure_http: true }, spec({ url }))).toEqual([])
  })

  it("an input schema that does not compile, has an unknown dialect or is not an object schema is refused", () => {
    expect(
      checkHttpTool(secure, spec({ input_schema: { type: "object", properties: { id: { type: "strin" } } } }))
    ).toEqual([{ pointer: "/input_schema", message: expect.stringContaining("schema is invalid") }])
    expect(
      checkHttpTool(
        secure,
        spec({ input_schema: { $schema: "http://json-schema.org/draft-04/schema#", type: "object" } })
      )
    ).toEqual([{ pointer: "/input_schema", message: expect.stringContaining("draft 2020-12 or draft-07") }])
    // Patterns are RE2 (linear time): a lookahead is refused where the tool is written, with RE2's reason.
    const lookahead = { type: "object", properties: { id: { type: "string", pattern: "^(?=x)x$" } } }
    expect(checkHttpTool(secure, spec({ input_schema: lookahead }))).toEqual([
      {
        pointer: "/input_schema",
        message: expect.stringMatching(
          /^pattern "\^\(\?=x\)x\$" is not supported: .*no lookaround, no backreference\)$/
        )
      }
    ])
    expect(checkHttpTool(secure, spec({ url: "https://api.example.test/x", input_schema: { type: "array" } }))).toEqual(
      [{ pointer: "/input_schema/type", message: 'must be "object"' }]
    )
    expect(
      checkHttpTool(
        secure,
        spec({ input_schema: { type: "object", properties: { id: { $ref: "https://elsewhere.test/s.json" } } } })
      )
    ).toEqual([{ pointer: "/input_schema", message: expect.stringContaining("can't resolve reference") }])
  })

  it("variables and pointers must name properties of a closed schema", () => {
    const closed = { type: "object", properties: { id: { type: "string" } }, additionalProperties: false }
    expect(checkHttpTool(secure, spec({ input_schema: closed }))).toEqual([
      { pointer: "/url", message: "the variable fields is not a property of the input schema" }
    ])
    expect(
      checkHttpTool(
        secure,
        spec({
          url: "https://api.example.test/x/{id}",
          method: "PUT",
          body: { argument: "/payload" },
          input_schema: closed
        })
      )
    ).toEqual([{ pointer: "/body/argument", message: "the argument payload is not a property of the input schema" }])
  })

  it("a body on GET or HEAD, or a malformed pointer, is refused", () => {
    expect(checkHttpTool(secure, spec({ body: { argument: "/id" } }))).toEqual([
      { pointer: "/body", message: "a GET request has no body" }
    ])
    expect(checkHttpTool(secure, spec({ method: "POST", body: { argument: "/a~2b" } }))).toEqual([
      { pointer: "/body/argument", message: expect.stringContaining("JSON Pointer") }
    ])
  })

  it.each([
    ["Authorization", "set by the gateway"],
    ["host", "set by the gateway"],
    ["Content-Length", "set by the gateway"],
    ["Transfer-Encoding", "set by the gateway"],
    ["Cookie", "set by the gateway"],
    ["X Bad", "not an HTTP header name"],
    ["X-Bad\r\n", "not an HTTP header name"]
  ])("the argument header %s is refused (%s)", (name, message) => {
    const problems = checkHttpTool(secure, spec({ argument_headers: { [name]: "/id" } }))
    expect(problems).toEqual([{ pointer: `/argument_headers/${name}`, message: expect.stringContaining(message) }])
  })

  it("a header named twice in different case is refused", () => {
    const problems = checkHttpTool(secure, spec({ argument_headers: { "X-Id": "/id", "x-id": "/fields" } }))
    expect(problems).toEqual([{ pointer: "/argument_headers/x-id", message: expect.stringContaining("named twice") }])
  })
})

describe("checkEndpointHeaders", () => {
  it("fixed headers with header names and printable values have no problem", () => {
    expect(checkEndpointHeaders({ "X-Api-Key": "k-123", Accept: "application/json" })).toEqual([])
  })

  it.each([
    [{ Host: "evil.test" }, "/headers/Host", "host is set by the gateway"],
    [{ "Content-Length": "0" }, "/headers/Content-Length", "content-length is set by the gateway"],
    [{ "Transfer-Encoding": "chunked" }, "/headers/Transfer-Encoding", "transfer-encoding is set by the gateway"],
    [{ "X Key": "v" }, "/headers/X Key", "not an HTTP header name"],
    [{ "X-Key": "a\r\nX-Evil: 1" }, "/headers/X-Key", "printable ASCII"],
    [{ "X-Key": "a\u0000" }, "/headers/X-Key", "printable ASCII"],
    [{ "X-Key": "é" }, "/headers/X-Key", "printable ASCII"],
    [{ "X-Key": "a", "x-key": "b" }, "/headers/x-key", "named twice"]
  ])("%j is refused at %s (%s), never quoting the value", (headers, pointer, message) => {
    const problems = checkEndpointHeaders(headers)
    expect(problems).toEqual([{ pointer, message: expect.stringContaining(message) }])
    for (const value of Object.values(headers)) if (value.length > 1) expect(problems[0]!.message).not.toContain(value)
  })
})
