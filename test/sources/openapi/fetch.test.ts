/**
 * OpenAPI imports from a URL, against a real HTTPS server (test CA, test/support/test-ca.ts): the
 * Petstore description fetched and imported with relative servers resolved against its URL; https
 * only; the server's certificate verified; redirects kept to the URL's origin; answers over 32 MiB
 * stopped without reading them whole; errors, slow answers and bad encodings refused.
 */

import type { IncomingMessage, ServerResponse } from "node:http"
import { createServer, type Server } from "node:https"
import type { AddressInfo } from "node:net"
import { Effect, Either } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { fetchDocument } from "../../../src/sources/openapi/fetch-document.js"
import { makeTestCa } from "../../support/test-ca.js"
import { fixture, imported, refused } from "./support.js"

const ca = makeTestCa()
const otherCa = makeTestCa("not the server's CA")
const petstore = fixture("petstore-3.0.yaml")
const MiB = 1024 * 1024

type Route = (request: IncomingMessage, response: ServerResponse) => void
const routes = new Map<string, Route>()
/** Bytes of body the server handed to the socket, per path. */
const written = new Map<string, number>()
let server: Server
let origin: string

beforeAll(async () => {
  server = createServer({ cert: ca.cert, key: ca.key }, (request, response) => {
    const route = routes.get(request.url ?? "")
    if (route === undefined) {
      response.statusCode = 404
      response.end("not here")
    } else route(request, response)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  origin = `https://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(async () => {
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
  ca.remove()
  otherCa.remove()
})

const serve = (path: string, body: string, type = "application/yaml") =>
  routes.set(path, (_, response) => {
    response.setHeader("content-type", type)
    response.end(body)
  })

/** Writes `total` bytes of a JSON string in 64 KiB chunks, as fast as the client reads them. */
const stream = (path: string, total: number, declare: boolean) =>
  routes.set(path, (_, response) => {
    written.set(path, 0)
    if (declare) response.setHeader("content-length", String(total))
    const chunk = Buffer.alloc(64 * 1024, "x")
    const next = () => {
      while ((written.get(path) ?? 0) < total) {
        written.set(path, (written.get(path) ?? 0) + chunk.length)
        if (!response.write(chunk)) return void response.once("drain", next)
      }
      response.end()
    }
    next()
  })

describe("an import from a URL", () => {
  it("fetches the Petstore description over HTTPS and resolves its relative server against the URL", async () => {
    serve("/api/v3/openapi.yaml", petstore.replace("- url: https://petstore3.swagger.io/api/v3", "- url: /api/v3"))
    const result = await imported({ source: { url: `${origin}/api/v3/openapi.yaml` }, ca: ca.caPem })
    expect(result.tools).toHaveLength(19)
    expect(result.tools.find((tool) => tool.name === "getPetById")?.url).toBe(`${origin}/api/v3/pet/{petId}`)
    const overridden = await imported({
      source: { url: `${origin}/api/v3/openapi.yaml` },
      ca: ca.caPem,
      server_url: "https://pets.internal.test/v3/"
    })
    expect(overridden.tools.find((tool) => tool.name === "getPetById")?.url).toBe(
      "https://pets.internal.test/v3/pet/{petId}"
    )
  })

  it("follows a redirect within the origin, and refuses one to another origin", async () => {
    serve("/spec.yaml", petstore)
    routes.set("/moved", (_, response) => {
      response.writeHead(301, { location: "/spec.yaml" }).end()
    })
    const followed = await imported({ source: { url: `${origin}/moved` }, ca: ca.caPem })
    expect(followed.tools).toHaveLength(19)
    // localhost is the same server under another origin.
    routes.set("/elsewhere", (_, response) => {
      response.writeHead(302, { location: origin.replace("127.0.0.1", "localhost") + "/spec.yaml" }).end()
    })
    const refusal = await refused({ source: { url: `${origin}/elsewhere` }, ca: ca.caPem })
    expect(refusal).toMatchObject({ pointer: "", message: "the document's URL redirected to another origin" })
  })

  it("refuses plain http, even to loopback, and URLs holding credentials", async () => {
    expect(await refused({ source: { url: origin.replace("https:", "http:") } })).toMatchObject({
      message: "the document's URL must be https"
    })
    expect(await refused({ source: { url: origin.replace("https://", "https://admin:pw@") } })).toMatchObject({
      message: "the document's URL may not hold credentials"
    })
  })

  it("verifies the server's certificate: one the given CA did not sign is refused", async () => {
    serve("/spec.yaml", petstore)
    const refusal = await refused({ source: { url: `${origin}/spec.yaml` }, ca: otherCa.caPem })
    expect(refusal.message).toMatch(/^fetching the document failed \([A-Z_]+\)$/)
  })

  it("refuses an error answer, naming its status only", async () => {
    const refusal = await refused({ source: { url: `${origin}/missing.yaml` }, ca: ca.caPem })
    expect(refusal).toMatchObject({ pointer: "", message: "fetching the document answered HTTP 404" })
  })

  it("refuses a document over 32 MiB without reading it whole, declared or not", async () => {
    stream("/huge-declared.json", 40 * MiB, true)
    const declared = await refused({ source: { url: `${origin}/huge-declared.json` }, ca: ca.caPem })
    expect(declared).toMatchObject({ pointer: "", message: "the document is larger than 33554432 bytes" })
    stream("/huge.json", 64 * MiB, false)
    const undeclared = await refused({ source: { url: `${origin}/huge.json` }, ca: ca.caPem })
    expect(undeclared).toMatchObject({ pointer: "", message: "the document is larger than 33554432 bytes" })
    // The reader stopped a little past the limit (what sat in socket buffers), far from 64 MiB.
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect(written.get("/huge.json")).toBeLessThan(40 * MiB)
  })

  it("gives up on a server that answers too slowly", async () => {
    routes.set("/slow.yaml", (_, response) => {
      response.write("openapi: 3.0.3\n")
    })
    const outcome = await Effect.runPromise(
      Effect.either(fetchDocument(new URL(`${origin}/slow.yaml`), ca.caPem, { maxBytes: MiB, timeout: "300 millis" }))
    )
    expect(Either.isLeft(outcome) && outcome.left.message).toBe("fetching the document took too long")
  })

  it("refuses a document that is not UTF-8", async () => {
    routes.set("/latin1.yaml", (_, response) => {
      response.end(Buffer.from([0x6f, 0x70, 0x65, 0x6e, 0x61, 0x70, 0x69, 0x3a, 0x20, 0xe9, 0xff, 0x0a]))
    })
    const refusal = await refused({ source: { url: `${origin}/latin1.yaml` }, ca: ca.caPem })
    expect(refusal.message).toBe("fetching the document failed (the document is not UTF-8)")
  })
})
