/**
 * Documents the importer refuses, each naming the JSON Pointer at fault (RFC 6901): faults the parser's
 * validation finds, references that leave the document or point at nothing, paths that would change
 * a request's shape, names that collide, documents too large or too deep. Nothing is fetched for a
 * reference: a real HTTPS server stands where one points and must see no request.
 */
import { createServer } from "node:https"
import type { AddressInfo } from "node:net"
import { afterAll, describe, expect, it } from "vitest"
import { makeTestCa } from "../../support/test-ca.js"
import { document30, imported, ok, refused } from "./support.js"

const ca = makeTestCa()
afterAll(() => ca.remove())

const get = (extra: Record<string, unknown> = {}) => ({ get: { operationId: "listPets", responses: ok, ...extra } })

describe("invalid documents", () => {
  it("names the operation's responses when they are not an object", async () => {
    const refusal = await refused({ source: { document: document30({ "/pets": get({ responses: "nope" }) }) } })
    expect(refusal.pointer).toBe("/paths/~1pets/get/responses")
    expect(refusal.message).toMatch(/must be object/)
  })

  it("names the parameter whose location is not one OpenAPI knows", async () => {
    const refusal = await refused({
      source: { document: document30({ "/pets": get({ parameters: [{ name: "limit", in: "querry" }] }) }) }
    })
    expect(refusal.pointer).toMatch(/^\/paths\/~1pets\/get\/parameters\/0/)
  })

  it("names a missing required field of the document itself", async () => {
    const document: Record<string, unknown> = document30({ "/pets": get() })
    delete document.info
    const refusal = await refused({ source: { document } })
    expect(refusal.pointer).toBe("")
    expect(refusal.message).toMatch(/info/)
  })

  it("refuses what is not OpenAPI 3.0 or 3.1 at /openapi", async () => {
    const swagger = { swagger: "2.0", info: { title: "t", version: "1" }, paths: {} }
    expect(await refused({ source: { document: swagger } })).toMatchObject({ pointer: "/openapi" })
    expect(await refused({ source: { document: { ...document30({}), openapi: "4.0.0" } } })).toMatchObject({
      pointer: "/openapi"
    })
  })

  it("refuses text that is neither JSON nor YAML, naming the line, without quoting it", async () => {
    const json = await refused({ source: { document: '{"openapi": "3.0.3",\n "info": {"title": "secret-value" ]}' } })
    expect(json.pointer).toBe("")
    expect(json.message).toMatch(/^the document is not valid JSON \(line 2, column \d+\)$/)
    expect(json.message).not.toContain("secret-value")
    const yaml = await refused({ source: { document: "openapi: 3.0.3\ninfo:\n  title: [unclosed secret-value\n" } })
    expect(yaml.message).toMatch(/^the document is not valid YAML \(line \d+, column \d+: [A-Z_]+\)$/)
    expect(yaml.message).not.toContain("secret-value")
    const bomb = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for (let level = 1; level < 8; level++) {
      bomb.push(
        `${String.fromCharCode(97 + level)}: &${String.fromCharCode(97 + level)} [${`*${String.fromCharCode(96 + level)}, `.repeat(9)}*${String.fromCharCode(96 + level)}]`
      )
    }
    const aliases = await refused({ source: { document: `${bomb.join("\n")}\nopenapi: 3.0.3\n` } })
    expect(aliases.message).toMatch(/aliases/)
  })

  it("names a reference that points at nothing in the document", async () => {
    const document = document30({
      "/pets": get({
        responses: {
          "200": {
            description: "ok",
            content: { "application/json": { schema: { $ref: "#/components/schemas/Missing" } } }
          }
        }
      })
    })
    const refusal = await refused({ source: { document } })
    expect(refusal.pointer).toBe("/paths/~1pets/get/responses/200/content/application~1json/schema/$ref")
    expect(refusal.message).toMatch(/points at nothing/)
  })

  it("names a $ref that is not a string, wherever it is (the parser's resolution refused it too)", async () => {
    const withSchema = (schema: Record<string, unknown>) =>
      document30(
        {
          "/pets": get({
            responses: {
              "200": {
                description: "ok",
                content: { "application/json": { schema: { $ref: "#/components/schemas/Pet" } } }
              }
            }
          })
        },
        { components: { schemas: { Pet: schema } } }
      )
    const inExample = await refused({ source: { document: withSchema({ type: "object", example: { $ref: 5 } }) } })
    expect(inExample).toMatchObject({
      pointer: "/components/schemas/Pet/example/$ref",
      message: 'a "$ref" must be a reference ("#/..."), not number'
    })
    const asProperty = await refused({
      source: { document: withSchema({ type: "object", properties: { $ref: { type: "string" } } }) }
    })
    expect(asProperty).toMatchObject({ pointer: "/components/schemas/Pet/properties/$ref" })
    expect(asProperty.message).toMatch(/not object$/)
  })

  it("names references that lead back to themselves, and keeps recursive schemas", async () => {
    const withSchemas = (schemas: Record<string, unknown>) =>
      document30(
        {
          "/pets": {
            post: {
              operationId: "addPet",
              requestBody: { content: { "application/json": { schema: { $ref: "#/components/schemas/A" } } } },
              responses: ok
            }
          }
        },
        { components: { schemas } }
      )
    const itself = await refused({ source: { document: withSchemas({ A: { $ref: "#/components/schemas/A" } }) } })
    expect(itself).toMatchObject({
      pointer: "/components/schemas/A/$ref",
      message: 'the reference "#/components/schemas/A" leads back to itself: it names nothing'
    })
    const loop = await refused({
      source: {
        document: withSchemas({
          A: { $ref: "#/components/schemas/B" },
          B: { $ref: "#/components/schemas/C" },
          C: { $ref: "#/components/schemas/A" }
        })
      }
    })
    expect(loop.pointer).toMatch(/^\/components\/schemas\/[ABC]\/\$ref$/)
    expect(loop.message).toMatch(/leads back to itself: it names nothing$/)
    const fromOutside = await refused({
      source: {
        document: withSchemas({
          A: { $ref: "#/components/schemas/B" },
          B: { $ref: "#/components/schemas/C" },
          C: { $ref: "#/components/schemas/B" }
        })
      }
    })
    expect(fromOutside.message).toMatch(
      /leads (back to itself|into a loop of references \(through "#\/components\/schemas\/[BC]"\))/
    )
    const recursive = await imported({
      source: {
        document: withSchemas({
          A: { $ref: "#/components/schemas/Node" },
          Node: { type: "object", properties: { next: { $ref: "#/components/schemas/A" } } }
        })
      }
    })
    expect(recursive.tools.map((tool) => tool.name)).toEqual(["addPet"])
  })

  it("names a path parameter the path does not hold, and a {name} in the path no parameter declares", async () => {
    const undeclared = await refused({ source: { document: document30({ "/pets/{petId}": get() }) } })
    expect(undeclared.pointer).toBe("/paths/~1pets~1{petId}/get")
    expect(undeclared.message).toMatch(/\{petId\} is not declared/)
    const stray = await refused({
      source: {
        document: document30({
          "/pets": get({ parameters: [{ name: "petId", in: "path", required: true, schema: { type: "string" } }] })
        })
      }
    })
    expect(stray.pointer).toBe("/paths/~1pets/get/parameters/0/name")
  })

  it("refuses paths that would change the request's shape: dot segments, query, fragment, stray braces", async () => {
    for (const [path, problem] of [
      ["/pets/../admin", /"\." or "\.\." segments/],
      ["/pets/%2e%2E/admin", /"\." or "\.\." segments/],
      ["/pets?admin=true", /\? or #/],
      ["/pets#x", /\? or #/],
      ["/pets/{petId", /"\{" without its "\}"/],
      ["/pets/petId}", /"\}" without its "\{"/],
      ["/pets\\admin", /backslash/]
    ] as const) {
      const refusal = await refused({ source: { document: document30({ [path]: get() }) } })
      expect(refusal.pointer, path).toBe(`/paths/${path.replaceAll("/", "~1")}`)
      expect(refusal.message, path).toMatch(problem)
    }
  })

  it("refuses two operations whose tool names come out the same, naming both", async () => {
    const refusal = await refused({
      source: {
        document: document30({
          "/a": get({ operationId: "list pets" }),
          "/b": get({ operationId: "list/pets" })
        })
      }
    })
    expect(refusal.pointer).toBe("/paths/~1b/get/operationId")
    expect(refusal.message).toBe(
      'the tool name "list_pets" is also the name of the operation at /paths/~1a/get/operationId'
    )
  })

  it("refuses a document nested deeper than the parser is allowed to recurse", async () => {
    let deep: Record<string, unknown> = { type: "string" }
    for (let level = 0; level < 300; level++) deep = { type: "array", items: deep }
    const refusal = await refused({
      source: { document: document30({ "/pets": get() }, { components: { schemas: { Deep: deep } } }) }
    })
    expect(refusal.pointer).toMatch(/^\/components\/schemas\/Deep(\/items)+$/)
    expect(refusal.message).toMatch(/nested deeper than 256 levels/)
  })

  it("refuses an operation whose input schema grows past 20,000 nodes once its references are copied in", async () => {
    const schemas: Record<string, unknown> = {}
    for (let at = 0; at < 200; at++) {
      const properties: Record<string, unknown> = { next: { $ref: `#/components/schemas/C${(at + 1) % 200}` } }
      for (let field = 0; field < 100; field++) properties[`f${field}`] = { type: "string" }
      schemas[`C${at}`] = { type: "object", properties }
    }
    const document = document30(
      {
        "/things": {
          post: {
            operationId: "addThing",
            requestBody: { content: { "application/json": { schema: { $ref: "#/components/schemas/C0" } } } },
            responses: ok
          }
        }
      },
      { components: { schemas } }
    )
    const refusal = await refused({ source: { document } })
    expect(refusal.pointer).toBe("/paths/~1things/post")
    expect(refusal.message).toMatch(
      /^the operation's input schema is too large once its references are copied in \(past \/components\/schemas\/C\d+/
    )
  })

  it("refuses a relative server URL when there is no URL to resolve it against, and takes server_url instead", async () => {
    const document = { ...document30({ "/pets": get() }), servers: [{ url: "/api/v3" }] }
    const refusal = await refused({ source: { document } })
    expect(refusal).toMatchObject({ pointer: "/servers/0/url" })
    expect(refusal.message).toMatch(/relative: give server_url/)
    const credentials = await refused({
      source: { document: { ...document, servers: [{ url: "https://user:pw@api.example.test/" }] } }
    })
    expect(credentials).toMatchObject({ pointer: "/servers/0/url", message: "the server URL may not hold credentials" })
  })

  it("refuses a document larger than 32 MiB given in the request, before parsing it", async () => {
    const huge = `{"openapi": "3.0.3", "x-padding": "${"x".repeat(32 * 1024 * 1024)}"}`
    const refusal = await refused({ source: { document: huge } })
    expect(refusal).toMatchObject({ pointer: "", message: "the document is larger than 33554432 bytes" })
  })
})

describe("references outside the document", () => {
  it("are refused naming the pointer, and nothing is fetched", async () => {
    let requests = 0
    const server = createServer({ cert: ca.cert, key: ca.key }, (_, response) => {
      requests += 1
      response.end("{}")
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    const { port } = server.address() as AddressInfo
    try {
      for (const ref of [
        `https://127.0.0.1:${port}/pet.json`,
        "pet.yaml#/Pet",
        "//127.0.0.1/pet.json",
        "file:///etc/passwd"
      ]) {
        const document = document30({
          "/pets": get({
            responses: {
              "200": { description: "ok", content: { "application/json": { schema: { $ref: ref } } } }
            }
          })
        })
        const refusal = await refused({ source: { document }, ca: ca.caPem })
        expect(refusal.pointer, ref).toBe("/paths/~1pets/get/responses/200/content/application~1json/schema/$ref")
        expect(refusal.message, ref).toMatch(/leaves the document/)
      }
      const anchor = await refused({
        source: { document: document30({ "/pets": get({ parameters: [{ $ref: "#pet" }] }) }) }
      })
      expect(anchor).toMatchObject({ pointer: "/paths/~1pets/get/parameters/0/$ref" })
      expect(requests).toBe(0)
    } finally {
      await new Promise((resolve) => server.close(resolve))
    }
  })
})
