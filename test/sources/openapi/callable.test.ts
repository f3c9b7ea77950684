/**
 * docs/tool-sources.md, "OpenAPI imports": the real Swagger Petstore 3.0 description, imported with its
 * server pointed at a real HTTPS server (test CA), yields tools the live HTTP client calls — the path
 * parameter in the path, the query list in the query, the JSON body sent as the body, and the imported
 * input schema refusing a wrong type before anything is sent.
 */
import { Context, Duration, Effect, Exit, Layer, Scope } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { httpToolsLayer } from "../../../src/sources/http/live.js"
import { HttpTools } from "../../../src/sources/http/service.js"
import type { HttpEndpoint, HttpToolSpec } from "../../../src/sources/schema.js"
import { type HttpsToolServer, startHttpsToolServer } from "../../support/https-tool-server.js"
import { makeTestCa } from "../../support/test-ca.js"
import { fixture, imported } from "./support.js"

const scope = Effect.runSync(Scope.make())
let server: HttpsToolServer
let tools: Context.Tag.Service<HttpTools>
let petstore: ReadonlyArray<HttpToolSpec>

beforeAll(async () => {
  const ca = makeTestCa()
  server = await startHttpsToolServer(ca)
  tools = Context.get(await Effect.runPromise(Layer.buildWithScope(httpToolsLayer({ ca: ca.caPem }), scope)), HttpTools)
  petstore = (
    await imported({ source: { document: fixture("petstore-3.0.yaml") }, server_url: `${server.origin}/echo/v3` })
  ).tools
})
afterAll(async () => {
  await Effect.runPromise(Scope.close(scope, Exit.void))
  await server?.close()
})

const endpoint: HttpEndpoint = {
  kind: "openapi_import",
  id: "petstore",
  allow_insecure_http: false,
  headers: {},
  credentials: undefined,
  required_scopes: [],
  tool_rules: [],
  naming: { resource_uris: "gateway" },
  timeouts: { call: Duration.seconds(10) },
  max_answer_bytes: 1024 * 1024,
  tools: []
}

const call = (name: string, args: Record<string, unknown>) => {
  const tool = petstore.find((each) => each.name === name)
  if (tool === undefined) throw new Error(`no imported tool ${name}`)
  return Effect.runPromise(Effect.either(tools.call(endpoint, tool, args, new AbortController().signal)))
}

describe("the imported Swagger Petstore, called with the live HTTP client", () => {
  it("sends getPetById, findPetsByStatus and addPet as the document describes them", async () => {
    const byId = await call("getPetById", { petId: 42 })
    expect(byId._tag).toBe("Right")
    expect(byId._tag === "Right" && byId.right.structuredContent).toMatchObject({
      method: "GET",
      path: "/echo/v3/pet/42"
    })

    const byStatus = await call("findPetsByStatus", { status: "sold" })
    expect(byStatus._tag === "Right" && byStatus.right.structuredContent).toMatchObject({
      method: "GET",
      target: "/echo/v3/pet/findByStatus?status=sold"
    })

    const pet = { id: 7, name: "Rex", photoUrls: ["https://example.com/rex.png"], status: "available" }
    const added = await call("addPet", { body: pet })
    expect(added._tag === "Right" && added.right.structuredContent).toMatchObject({
      method: "POST",
      path: "/echo/v3/pet"
    })
    expect(JSON.parse(String(server.requests.at(-1)?.body))).toEqual(pet)
  })

  it("refuses arguments the imported schema does not allow, before anything is sent", async () => {
    const before = server.requests.length
    const wrong = await call("getPetById", { petId: "../admin" })
    expect(wrong._tag).toBe("Left")
    expect(wrong._tag === "Left" && wrong.left.message).toContain("/petId")
    expect(server.requests.length).toBe(before)
  })
})
