/**
 * Where `resources/read` sends a URI (docs/mcp.md, "Naming"; src/mcp/catalog/index.ts, `routeUri`):
 * two real backends exposing their original URIs, one of them (`alpha`) open only to a token with
 * `alpha:read`. A URI is routed only among the backends the caller may read, so a backend hidden from
 * the caller neither receives its reads nor takes a URI from a backend it can read; and a URI both
 * backends list (`catalog.name_collision`) is refused with a clear error instead of going to one.
 */
import { ResourceTemplate } from "@modelcontextprotocol/server"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { alphaTools, startBackend, type TestBackend } from "../support/mcp-backends.js"
import { connectClient } from "../support/mcp-clients.js"
import { startTestGateway, type TestGateway } from "../support/mcp-gateway.js"

let alpha: TestBackend
let beta: TestBackend
let gateway: TestGateway
const open: Array<{ close(): Promise<void> }> = []

beforeAll(async () => {
  // alpha: `note://readme` and the template `note://notes/{id}`.
  alpha = await startBackend("alpha", alphaTools)
  // beta: `note://readme` too (a collision), and `note://{+path}`, whose literal start is shorter.
  beta = await startBackend("beta", (server) => {
    server.registerResource("readme", "note://readme", { mimeType: "text/plain" }, async (uri) => ({
      contents: [{ uri: uri.href, text: "beta readme" }]
    }))
    server.registerResource(
      "any",
      new ResourceTemplate("note://{+path}", { list: undefined }),
      { mimeType: "text/plain" },
      async (uri) => ({ contents: [{ uri: uri.href, text: `beta ${uri.href}` }] })
    )
  })
  const original = { resource_uris: "original" }
  gateway = await startTestGateway({
    patch: {
      backends: [
        {
          id: "alpha",
          url: alpha.url,
          allow_insecure_http: true,
          required: true,
          required_scopes: ["alpha:read"],
          naming: original
        },
        { id: "beta", url: beta.url, allow_insecure_http: true, required: true, naming: original }
      ]
    }
  })
})
afterAll(async () => {
  for (const client of open) await client.close()
  await gateway?.close()
  await alpha?.stop()
  await beta?.stop()
})

const connect = async (scopes: ReadonlyArray<string>) => {
  const client = await connectClient(gateway.mcpUrl, await gateway.token({ scopes }))
  open.push(client)
  return client
}

const reads = (backend: TestBackend) =>
  backend.requests.filter((request) => request.body.includes('"resources/read"')).length

const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: Error & { code?: number }) => ({ code: error.code, message: error.message })
  )

describe("resources/read routing", () => {
  it("a caller who may read only beta has its URIs routed among beta's alone", async () => {
    const client = await connect([])
    const alphaReads = reads(alpha)
    // alpha's template matches more of this URI, but the caller may not read alpha: beta's matches too.
    const note = await client.readResource({ uri: "note://notes/7" })
    expect(note.contents).toEqual([{ uri: "note://notes/7", text: "beta note://notes/7" }])
    expect(reads(alpha)).toBe(alphaReads)
  })

  it("a caller who may read both gets alpha's longer template match", async () => {
    const client = await connect(["alpha:read"])
    const note = await client.readResource({ uri: "note://notes/7" })
    expect(note.contents[0]).toMatchObject({ uri: "note://notes/7", text: "note 7" })
  })

  it.each([
    ["only beta", []],
    ["both", ["alpha:read"]]
  ] as const)("a URI both backends list is refused with a clear error (caller reads %s)", async (_, scopes) => {
    const client = await connect(scopes)
    expect((await client.listResources()).resources.map((resource) => resource.uri)).not.toContain("note://readme")
    const before = reads(alpha) + reads(beta)
    expect(await failure(client.readResource({ uri: "note://readme" }))).toEqual({
      code: -32602,
      message: expect.stringContaining(
        "Resource URI published by more than one backend, so the gateway reads it from none: note://readme"
      )
    })
    expect(reads(alpha) + reads(beta)).toBe(before)
  })
})
