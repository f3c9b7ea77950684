/**
 * The importer's mapping (src/sources/openapi): the real Swagger Petstore 3.0 description and a 3.1
 * document become the expected HTTP tools — names, methods, URL templates, input schemas that a real
 * JSON Schema validator (ajv, draft 2020-12, strict) compiles, read/write rules. Each import parses on
 * a real worker thread with the real parser.
 */
import { createHash } from "node:crypto"
import { Ajv2020 } from "ajv/dist/2020.js"
import addFormats from "ajv-formats"
import { Schema } from "effect"
import { describe, expect, it } from "vitest"
import { parse as parseYaml } from "yaml"
import { refusalKit } from "../../../src/sources/openapi/errors.js"
import { operationsKit } from "../../../src/sources/openapi/operations.js"
import { pointerKit } from "../../../src/sources/openapi/pointer.js"
import { schemasKit } from "../../../src/sources/openapi/schemas.js"
import { serverUrlKit } from "../../../src/sources/openapi/server-url.js"
import { templateKit } from "../../../src/sources/openapi/template.js"
import type { HttpToolSpec } from "../../../src/sources/schema.js"
import { ToolName } from "../../../src/sources/schema.js"
import { document30, fixture, imported, ok, refused } from "./support.js"

const petstoreText = fixture("petstore-3.0.yaml")

const byName = (tools: ReadonlyArray<HttpToolSpec>, name: string) => {
  const tool = tools.find((each) => each.name === name)
  if (tool === undefined) throw new Error(`no tool ${name}`)
  return tool
}

const compile = (schema: Record<string, unknown>) => {
  const ajv = new Ajv2020({ strict: true, allErrors: true })
  addFormats.default(ajv)
  return ajv.compile(schema)
}

describe("the Swagger Petstore 3.0 description", () => {
  it("yields one tool per operation, named by operationId, with its method and URL template", async () => {
    const result = await imported({ source: { document: petstoreText } })
    expect(result.title).toBe("Swagger Petstore - OpenAPI 3.0")
    expect(result.version).toBe("1.0.27-SNAPSHOT")
    expect(result.document_sha256).toBe(createHash("sha256").update(petstoreText).digest("hex"))
    expect(result.tools.map((tool) => [tool.name, tool.method, tool.url])).toEqual([
      ["updatePet", "PUT", "https://petstore3.swagger.io/api/v3/pet"],
      ["addPet", "POST", "https://petstore3.swagger.io/api/v3/pet"],
      ["findPetsByStatus", "GET", "https://petstore3.swagger.io/api/v3/pet/findByStatus{?status}"],
      ["findPetsByTags", "GET", "https://petstore3.swagger.io/api/v3/pet/findByTags{?tags*}"],
      ["getPetById", "GET", "https://petstore3.swagger.io/api/v3/pet/{petId}"],
      ["updatePetWithForm", "POST", "https://petstore3.swagger.io/api/v3/pet/{petId}{?name,status}"],
      ["deletePet", "DELETE", "https://petstore3.swagger.io/api/v3/pet/{petId}"],
      ["uploadFile", "POST", "https://petstore3.swagger.io/api/v3/pet/{petId}/uploadImage{?additionalMetadata}"],
      ["getInventory", "GET", "https://petstore3.swagger.io/api/v3/store/inventory"],
      ["placeOrder", "POST", "https://petstore3.swagger.io/api/v3/store/order"],
      ["getOrderById", "GET", "https://petstore3.swagger.io/api/v3/store/order/{orderId}"],
      ["deleteOrder", "DELETE", "https://petstore3.swagger.io/api/v3/store/order/{orderId}"],
      ["createUser", "POST", "https://petstore3.swagger.io/api/v3/user"],
      ["createUsersWithListInput", "POST", "https://petstore3.swagger.io/api/v3/user/createWithList"],
      ["loginUser", "GET", "https://petstore3.swagger.io/api/v3/user/login{?username,password}"],
      ["logoutUser", "GET", "https://petstore3.swagger.io/api/v3/user/logout"],
      ["getUserByName", "GET", "https://petstore3.swagger.io/api/v3/user/{username}"],
      ["updateUser", "PUT", "https://petstore3.swagger.io/api/v3/user/{username}"],
      ["deleteUser", "DELETE", "https://petstore3.swagger.io/api/v3/user/{username}"]
    ])
    expect(result.tool_rules).toEqual([
      {
        tools: [
          "findPetsByStatus",
          "findPetsByTags",
          "getPetById",
          "getInventory",
          "getOrderById",
          "loginUser",
          "logoutUser",
          "getUserByName"
        ],
        publish: true,
        write: false
      },
      {
        tools: [
          "updatePet",
          "addPet",
          "updatePetWithForm",
          "deletePet",
          "uploadFile",
          "placeOrder",
          "deleteOrder",
          "createUser",
          "createUsersWithListInput",
          "updateUser",
          "deleteUser"
        ],
        publish: true,
        write: true
      }
    ])
    // The image upload is sent as application/octet-stream only: the tool has no body, and says so.
    expect(result.skipped).toEqual([
      {
        pointer: "/paths/~1pet~1{petId}~1uploadImage/post/requestBody",
        reason: "request body left out of the tool: it is sent only as application/octet-stream, not JSON"
      }
    ])
    expect(byName(result.tools, "uploadFile").body).toBeUndefined()
  })

  it("maps parameters, headers and JSON bodies to arguments, with the operation's texts", async () => {
    const { tools } = await imported({ source: { document: petstoreText } })
    const getPet = byName(tools, "getPetById")
    expect(getPet.title).toBe("Find pet by ID.")
    expect(getPet.description).toBe("Returns a single pet.")
    expect(getPet.input_schema).toEqual({
      type: "object",
      properties: { petId: { type: "integer", description: "ID of pet to return" } },
      required: ["petId"],
      additionalProperties: false
    })
    const deletePet = byName(tools, "deletePet")
    expect(deletePet.argument_headers).toEqual({ api_key: "/api_key" })
    expect(deletePet.input_schema.required).toEqual(["petId"])
    const byStatus = byName(tools, "findPetsByStatus").input_schema.properties as Record<string, unknown>
    expect(byStatus.status).toEqual({
      type: "string",
      enum: ["available", "pending", "sold"],
      default: "available",
      description: "Status values that need to be considered for filter"
    })
    const addPet = byName(tools, "addPet")
    expect(addPet.body).toEqual({ argument: "/body" })
    expect(addPet.input_schema.required).toEqual(["body"])
    expect((addPet.input_schema.properties as Record<string, unknown>).body).toEqual({
      $ref: "#/$defs/Pet",
      description: "Create a new pet in the store"
    })
    expect(Object.keys(addPet.input_schema.$defs as object)).toEqual(["Pet", "Category", "Tag"])
    // The 3.0 schema's int64 format is OpenAPI's own: dropped; `example` became `examples`.
    const pet = (addPet.input_schema.$defs as { Pet: { properties: Record<string, unknown> } }).Pet
    expect(pet.properties.id).toEqual({
      type: "integer",
      examples: [10]
    })
  })

  it("gives input schemas a strict draft 2020-12 validator compiles, and that accept and refuse arguments", async () => {
    const { tools } = await imported({ source: { document: petstoreText } })
    for (const tool of tools) {
      expect(Schema.is(ToolName)(tool.name)).toBe(true)
      expect(() => compile(tool.input_schema), tool.name).not.toThrow()
    }
    const addPet = compile(byName(tools, "addPet").input_schema)
    expect(addPet({ body: { name: "Rex", photoUrls: ["https://x.test/rex.png"], status: "sold" } })).toBe(true)
    expect(addPet({ body: { photoUrls: [] } })).toBe(false)
    expect(addPet({ body: { name: "Rex", photoUrls: [], status: "lost" } })).toBe(false)
    expect(addPet({ body: { name: "Rex", photoUrls: [] }, extra: 1 })).toBe(false)
    const getPet = compile(byName(tools, "getPetById").input_schema)
    expect(getPet({ petId: 7 })).toBe(true)
    expect(getPet({ petId: "../admin" })).toBe(false)
  })

  it("gives the same tools from the YAML text and from the document as an object", async () => {
    const fromText = await imported({ source: { document: petstoreText } })
    const fromObject = await imported({ source: { document: parseYaml(petstoreText) } })
    expect(fromObject.tools).toEqual(fromText.tools)
    expect(fromObject.document_sha256).not.toBe(fromText.document_sha256)
  })
})

describe("an OpenAPI 3.1 document", () => {
  it("maps server variables, path-level and referenced parameters, header arguments and JSON Schema 2020-12", async () => {
    const result = await imported({ source: { document: fixture("notes-3.1.json") } })
    expect(result.title).toBe("Notes")
    expect(result.tools.map((tool) => [tool.name, tool.method, tool.url])).toEqual([
      ["listNotes", "GET", "https://eu.notes.example.test/v2/folders/{folderId}/notes{?limit,tag}"],
      ["post_folders_folderId_notes", "POST", "https://eu.notes.example.test/v2/folders/{folderId}/notes"],
      ["getFolder", "GET", "https://eu.notes.example.test/v2/folders/{folderId}"]
    ])
    const [list, add, folder] = result.tools as [HttpToolSpec, HttpToolSpec, HttpToolSpec]
    expect(list.input_schema).toEqual({
      type: "object",
      properties: {
        limit: { type: "integer", exclusiveMinimum: 0, maximum: 100, default: 20 },
        tag: { type: "array", items: { type: "string" } },
        folderId: { type: "string", format: "uuid" }
      },
      required: ["folderId"],
      additionalProperties: false
    })
    expect(result.skipped).toEqual([
      {
        pointer: "/paths/~1folders~1{folderId}~1notes/get/parameters/2",
        reason: "parameter left out of the tool: it is a cookie, which HTTP tools do not send"
      }
    ])
    expect(add.title).toBe("Add a note to a folder")
    expect(add.description).toBe("Adds a note; the answer is the note as stored.")
    expect(add.argument_headers).toEqual({ "Idempotency-Key": "/Idempotency-Key" })
    expect(add.body).toEqual({ argument: "/body" })
    expect(add.input_schema.required).toEqual(["folderId", "Idempotency-Key", "body"])
    // 3.1: a $ref's siblings apply beside it.
    expect((add.input_schema.properties as Record<string, unknown>).body).toEqual({
      $ref: "#/$defs/NewNote",
      description: "The note to add"
    })
    expect((add.input_schema.$defs as Record<string, unknown>).NewNote).toEqual({
      type: "object",
      required: ["text"],
      properties: {
        text: { type: "string", minLength: 1, examples: ["Buy milk"] },
        pinned: { type: ["boolean", "null"] },
        kind: { const: "note" },
        "x-internal": { type: "string" }
      },
      additionalProperties: false
    })
    // A recursive schema stays recursive, once.
    expect(folder.input_schema.properties).toEqual({ folderId: { type: "string" } })
    for (const tool of result.tools) expect(() => compile(tool.input_schema), tool.name).not.toThrow()
    const addCheck = compile(add.input_schema)
    expect(
      addCheck({
        folderId: "5b3e0f4e-3c55-4a8e-9d38-2f1a4f5b6c7d",
        "Idempotency-Key": "k",
        body: { text: "a", pinned: null }
      })
    ).toBe(true)
    expect(
      addCheck({ folderId: "5b3e0f4e-3c55-4a8e-9d38-2f1a4f5b6c7d", "Idempotency-Key": "k", body: { text: "" } })
    ).toBe(false)
  })
})

describe("OpenAPI 3.0 schemas", () => {
  it("become JSON Schema: nullable, boolean exclusive bounds, example; OpenAPI keywords and patterns dropped", async () => {
    const document = document30(
      {
        "/things": {
          post: {
            operationId: "addThing",
            requestBody: {
              content: { "application/json": { schema: { $ref: "#/components/schemas/Thing" } } }
            },
            responses: ok
          }
        }
      },
      {
        components: {
          schemas: {
            Thing: {
              type: "object",
              discriminator: { propertyName: "kind" },
              xml: { name: "thing" },
              "x-vendor": true,
              properties: {
                kind: { type: "string", enum: ["a", "b"], nullable: true },
                size: { type: "number", minimum: 0, exclusiveMinimum: true, maximum: 10, exclusiveMaximum: false },
                when: { type: "string", format: "date-time", example: "2026-01-01T00:00:00Z" },
                code: { type: "string", pattern: "^(a+)+$", format: "password" },
                tree: { $ref: "#/components/schemas/Tree" },
                either: { allOf: [{ $ref: "#/components/schemas/Tree" }], nullable: true }
              }
            },
            Tree: {
              type: "object",
              properties: { children: { type: "array", items: { $ref: "#/components/schemas/Tree" } } }
            }
          }
        }
      }
    )
    const { tools } = await imported({ source: { document } })
    const schema = tools[0]?.input_schema ?? {}
    expect(schema.$defs).toEqual({
      Thing: {
        type: "object",
        properties: {
          kind: { type: ["string", "null"], enum: ["a", "b", null] },
          size: { type: "number", exclusiveMinimum: 0, maximum: 10 },
          when: { type: "string", format: "date-time", examples: ["2026-01-01T00:00:00Z"] },
          code: { type: "string" },
          tree: { $ref: "#/$defs/Tree" },
          either: { anyOf: [{ allOf: [{ $ref: "#/$defs/Tree" }] }, { type: "null" }] }
        }
      },
      Tree: { type: "object", properties: { children: { type: "array", items: { $ref: "#/$defs/Tree" } } } }
    })
    const check = compile(schema)
    expect(check({ body: { kind: null, size: 10, either: null } })).toBe(true)
    expect(check({ body: { size: 0 } })).toBe(false)
  })
})

describe("tool names", () => {
  it("are operationIds made to fit the tool-name rule, and <method>_<path> without one", async () => {
    const long = "x".repeat(300)
    const document = document30({
      "/a": { get: { operationId: "lïst pets/../../etc\u202e", responses: ok } },
      "/b": { get: { operationId: long, responses: ok } },
      "/c/{id}/déjà vu": {
        get: { parameters: [{ name: "id", in: "path", required: true, schema: { type: "string" } }], responses: ok }
      },
      "/d/{pet-id}": {
        delete: {
          operationId: "💥",
          parameters: [{ name: "pet-id", in: "path", required: true, schema: { type: "string" } }],
          responses: ok
        }
      }
    })
    const { tools } = await imported({ source: { document } })
    expect(tools.map((tool) => [tool.name, tool.url])).toEqual([
      ["l_st_pets_.._.._etc_", "https://api.example.test/v1/a"],
      ["x".repeat(128), "https://api.example.test/v1/b"],
      ["get_c_id_d_j_vu", "https://api.example.test/v1/c/{id}/d%C3%A9j%C3%A0%20vu"],
      ["delete_d_pet-id", "https://api.example.test/v1/d/{pet_id}"]
    ])
    for (const tool of tools) expect(Schema.is(ToolName)(tool.name)).toBe(true)
    expect(tools[3]?.input_schema.required).toEqual(["pet_id"])
  })
})

describe("what a tool cannot send", () => {
  it("is left out — a parameter when optional, the operation when required — and listed with its reason", async () => {
    const text = (name: string, where: string, required = false) => ({
      name,
      in: where,
      required,
      schema: { type: "string" }
    })
    const document = document30({
      "/search|all/50%/x%zz": {
        get: {
          operationId: "search",
          parameters: [
            text("filter[status]", "query"),
            text("sort", "query"),
            { ...text("ids", "query"), style: "pipeDelimited" },
            text("Host", "header"),
            text("Content-Type", "header"),
            text("X-Trace", "header")
          ],
          responses: ok
        },
        post: { operationId: "strict", parameters: [text("filter[status]", "query", true)], responses: ok },
        put: { operationId: "cookie", parameters: [text("session", "cookie", true)], responses: ok },
        options: { operationId: "probe", responses: ok }
      }
    })
    const { tools, skipped } = await imported({ source: { document } })
    expect(tools.map((tool) => [tool.name, tool.url, Object.keys(tool.input_schema.properties as object)])).toEqual([
      ["search", "https://api.example.test/v1/search%7Call/50%25/x%25zz{?sort}", ["sort", "X-Trace"]]
    ])
    expect(tools[0]?.argument_headers).toEqual({ "X-Trace": "/X-Trace" })
    const at = "/paths/~1search|all~150%~1x%zz"
    expect(skipped).toEqual([
      {
        pointer: `${at}/get/parameters/0`,
        reason: "parameter left out of the tool: it has a name a URL template cannot write as a query parameter"
      },
      {
        pointer: `${at}/get/parameters/2`,
        reason:
          "parameter left out of the tool: it is sent in the pipeDelimited style, which a URL template cannot write"
      },
      {
        pointer: `${at}/get/parameters/3`,
        reason: "parameter left out of the tool: it names a header an argument may not set"
      },
      {
        pointer: `${at}/put`,
        reason: `operation left out: its required parameter ${at}/put/parameters/0 is a cookie, which HTTP tools do not send`
      },
      {
        pointer: `${at}/post`,
        reason: `operation left out: its required parameter ${at}/post/parameters/0 has a name a URL template cannot write as a query parameter`
      },
      { pointer: `${at}/options`, reason: "operation left out: HTTP tools do not send OPTIONS requests" }
    ])
  })
})

describe("the parser's worker", () => {
  it("serves imports started together one at a time, each with its own document's tools or refusal", async () => {
    const [petstore, notes, broken, again] = await Promise.all([
      imported({ source: { document: petstoreText } }),
      imported({ source: { document: fixture("notes-3.1.json") } }),
      refused({ source: { document: document30({ "/pets": { get: { responses: "nope" } } }) } }),
      imported({ source: { document: petstoreText } })
    ])
    expect(petstore.tools).toHaveLength(19)
    expect(notes.tools.map((tool) => tool.name)).toEqual(["listNotes", "post_folders_folderId_notes", "getFolder"])
    expect(broken.pointer).toBe("/paths/~1pets/get/responses")
    expect(again).toEqual(petstore)
  })

  it("takes an info without a version as the parser's validation does: version 0.0.1", async () => {
    const document = {
      ...document30({ "/pets": { get: { operationId: "listPets", responses: ok } } }),
      info: { title: "t" }
    }
    const result = await imported({ source: { document } })
    expect(result).toMatchObject({ title: "t", version: "0.0.1" })
    expect(result.tools.map((tool) => tool.name)).toEqual(["listPets"])
  })

  it("maps there and sends back every tool and skipped part, in document order, as the mapping made them", async () => {
    // About 600 KB of tools and 200 KB of skipped entries: several of the worker's 64 KiB parts each.
    const paths: Record<string, unknown> = {}
    for (let at = 0; at < 1500; at++) {
      paths[`/items${at}/{id}`] = {
        parameters: [
          { name: "id", in: "path", required: true, schema: { type: "integer" } },
          { name: "session", in: "cookie", schema: { type: "string" } }
        ],
        get: { operationId: `get${at}`, responses: ok },
        put: {
          requestBody: { content: { "application/json": { schema: { $ref: "#/components/schemas/Item" } } } },
          responses: ok
        }
      }
    }
    const document = document30(paths, {
      components: {
        schemas: { Item: { type: "object", properties: { next: { $ref: "#/components/schemas/Item" } } } }
      }
    })
    const result = await imported({ source: { document } })
    const pointer = pointerKit()
    const refusal = refusalKit()
    const inProcess = operationsKit(
      pointer,
      templateKit(),
      schemasKit(pointer),
      serverUrlKit(pointer, refusal),
      refusal
    ).mapOperations({ document: structuredClone(document), version: "3.0" })
    expect(result.tools).toHaveLength(3000)
    expect(result.tools.slice(0, 3).map((tool) => tool.name)).toEqual(["get0", "put_items0_id", "get1"])
    expect(result.skipped).toHaveLength(3000)
    expect(JSON.stringify(result.tools).length).toBeGreaterThan(4 * 64 * 1024)
    expect(result.tools).toEqual(inProcess.tools)
    expect(result.skipped).toEqual(inProcess.skipped)
  })
})

describe("names that are JavaScript's own", () => {
  it("keeps a component, a property and a header named __proto__ as ordinary names", async () => {
    const text = JSON.stringify(
      document30(
        {
          "/things": {
            post: {
              operationId: "addThing",
              parameters: [{ name: "__proto__", in: "header", schema: { type: "string" } }],
              requestBody: { content: { "application/json": { schema: { $ref: "#/components/schemas/__proto__" } } } },
              responses: ok
            }
          }
        },
        { components: { schemas: { PROTO: { type: "object", properties: { PROTO: { type: "integer" } } } } } }
      )
    ).replaceAll("PROTO", "__proto__")
    const { tools } = await imported({ source: { document: text } })
    const tool = tools[0] as HttpToolSpec
    expect(Object.keys(tool.input_schema.properties as object)).toEqual(["__proto__", "body"])
    expect(Object.keys(tool.argument_headers)).toEqual(["__proto__"])
    const defs = tool.input_schema.$defs as Record<string, { properties: object }>
    expect(Object.keys(defs)).toEqual(["__proto__"])
    expect(Object.keys(Object.getOwnPropertyDescriptor(defs, "__proto__")?.value.properties)).toEqual(["__proto__"])
    expect(({} as Record<string, unknown>).type).toBeUndefined()
    expect(() => compile(tool.input_schema)).not.toThrow()
  })
})

describe("servers", () => {
  it("are the operation's, else its path item's, else the document's; server_url replaces them all", async () => {
    const document = document30({
      "/a": { get: { operationId: "a", servers: [{ url: "https://ops.example.test/x/" }], responses: ok } },
      "/b": {
        servers: [{ url: "https://{zone}.paths.example.test", variables: { zone: { default: "z1" } } }],
        get: { operationId: "b", responses: ok }
      },
      "/c": { get: { operationId: "c", responses: ok } }
    })
    const { tools } = await imported({ source: { document } })
    expect(tools.map((tool) => tool.url)).toEqual([
      "https://ops.example.test/x/a",
      "https://z1.paths.example.test/b",
      "https://api.example.test/v1/c"
    ])
    const replaced = await imported({ source: { document }, server_url: "https://gw-side.example.test/base" })
    expect(replaced.tools.map((tool) => tool.url)).toEqual([
      "https://gw-side.example.test/base/a",
      "https://gw-side.example.test/base/b",
      "https://gw-side.example.test/base/c"
    ])
    const broken = await refused({
      source: { document: { ...document, paths: { "/a": { get: { servers: [{ url: "/rel" }], responses: ok } } } } }
    })
    expect(broken).toMatchObject({ pointer: "/paths/~1a/get/servers/0/url" })
  })
})
