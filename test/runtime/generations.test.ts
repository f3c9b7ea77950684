/**
 * docs/operations.md, "Generations and reload" and "Shutdown" — the Generations service and the requests in
 * flight it drains: the drain is told when the last request ends (no polling), closing cancels what still
 * runs, and a gateway whose listener cannot bind closes the generation it had already built.
 */

import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Either, Exit, HashMap, Logger, Option } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { stringify } from "yaml"
import { parseConfig } from "../../src/config/load.js"
import { parseConfigKey } from "../../src/crypto/config-key.js"
import { baseLayer } from "../../src/runtime/base.js"
import { RequestsInFlight } from "../../src/runtime/requests-in-flight.js"
import { supervise } from "../../src/runtime/supervisor.js"
import { freePort } from "../support/gateway-process.js"

const dirs: Array<string> = []
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

/** A server whose requests wait until the test says so; every request is counted in `inFlight`. */
const holdingServer = async (inFlight: RequestsInFlight) => {
  const held: Array<ServerResponse> = []
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    inFlight.add(request, response)
    inFlight.onCancel(request, () => response.writeHead(503).end())
    held.push(response)
  })
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done))
  const port = (server.address() as AddressInfo).port
  const send = () =>
    new Promise<number>((done, fail) => {
      const sent = httpRequest({ port, host: "127.0.0.1" }, (answer) => {
        answer.resume()
        done(answer.statusCode ?? 0)
      })
      sent.on("error", fail)
      sent.end()
    })
  return { server, held, send }
}

describe("requests in flight", () => {
  it("tell the drain when the last one ends, and cancel what still runs", async () => {
    const inFlight = new RequestsInFlight()
    await inFlight.whenIdle()
    const { server, held, send } = await holdingServer(inFlight)
    const answers = [send(), send()]
    await expect.poll(() => inFlight.size).toBe(2)
    let idle = false
    const drained = inFlight.whenIdle().then(() => {
      idle = true
    })
    held[0]!.end("done")
    await expect.poll(() => inFlight.size).toBe(1)
    expect(idle).toBe(false)
    expect(inFlight.cancelAll()).toBe(1)
    await drained
    expect(await Promise.all(answers)).toEqual([200, 503])
    server.close()
  })
})

describe("a gateway whose listener cannot bind", () => {
  it("closes the generation it built and fails with the listen error", async () => {
    const taken = createServer()
    await new Promise<void>((done) => taken.listen(0, "127.0.0.1", done))
    const port = (taken.address() as AddressInfo).port
    const dir = mkdtempSync(join(tmpdir(), "gateway-generations-"))
    dirs.push(dir)
    const text = stringify({
      server: { listen: `127.0.0.1:${port}`, public_url: `http://127.0.0.1:${port}/mcp` },
      auth: { issuer: `http://127.0.0.1:${port}/sso` },
      storage: { type: "sqlite", path: join(dir, "gateway.db") },
      admin: { listen: `127.0.0.1:${await freePort()}` }
    })
    const loaded = Either.getOrThrow(parseConfig(join(dir, "gateway.yaml"), text, {}))
    const key = Effect.runSync(parseConfigKey(randomBytes(32).toString("base64")))
    const lines: Array<{ message: unknown; generation: unknown }> = []
    const recorder = Logger.make(({ message, annotations }) => {
      lines.push({ message, generation: Option.getOrUndefined(HashMap.get(annotations, "generation")) })
    })
    const exit = await Effect.runPromiseExit(
      supervise({ configFile: join(dir, "gateway.yaml"), env: {}, loaded, base: baseLayer(loaded.config, key) }).pipe(
        Effect.provide(Logger.replace(Logger.defaultLogger, recorder))
      )
    )
    taken.close()
    expect(Exit.isFailure(exit)).toBe(true)
    expect(String(Exit.isFailure(exit) ? exit.cause : "")).toContain(
      `cannot listen on 127.0.0.1:${port} (server.listen): the address is in use`
    )
    expect(lines).toContainEqual({ message: ["generation closed"], generation: 1 })
  })
})
