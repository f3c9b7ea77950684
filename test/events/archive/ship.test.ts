/**
 * One archive shipment (src/events/archive/ship.ts) against real HTTPS servers with a test CA: a
 * redirect is a failure and is never followed (the address it names gets nothing), and a receiver slower
 * than 10 s fails as `timeout` at 10 s on the TestClock, not a moment before.
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import { createServer, type Server } from "node:https"
import type { AddressInfo } from "node:net"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Option, TestClock } from "effect"
import { ARCHIVE_TIMEOUT_MS, shipEnvelope } from "../../../src/events/archive/ship.js"
import { DELIVERY_IDLE_MS, deliveryAgent } from "../../../src/events/delivery-agent.js"
import { makeTestCa } from "../../support/test-ca.js"

const ca = makeTestCa()
afterAll(() => ca.remove())

/** An HTTPS server answering with `handle`, closed with the test's scope; its URL and the bodies it got. */
const server = (handle: (request: IncomingMessage, response: ServerResponse) => void) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const received: Array<string> = []
      const started: Server = createServer({ cert: ca.cert, key: ca.key }, (request, response) => {
        const chunks: Array<Buffer> = []
        request.on("data", (chunk: Buffer) => chunks.push(chunk))
        request.on("end", () => {
          received.push(Buffer.concat(chunks).toString("utf8"))
          handle(request, response)
        })
      })
      await new Promise<void>((resolve) => started.listen(0, "127.0.0.1", resolve))
      const url = `https://127.0.0.1:${(started.address() as AddressInfo).port}/archive`
      return { url, received, started }
    }),
    ({ started }) =>
      Effect.promise(
        () =>
          new Promise<void>((resolve) => {
            started.closeAllConnections()
            started.close(() => resolve())
          })
      )
  )

const ENVELOPE = JSON.stringify({ entry: "{}", hash: "a".repeat(64), signature: "" })
const ship = (url: string) =>
  Effect.acquireUseRelease(
    Effect.sync(() => deliveryAgent(ca.caPem)),
    (agent) => shipEnvelope(url, ENVELOPE, 1, "a".repeat(64), agent),
    (agent) => Effect.sync(() => agent.destroy())
  )

describe("one archive shipment", () => {
  it.scoped("the kept connection is closed after DELIVERY_IDLE_MS unused, before a receiver's own 5 s", () =>
    Effect.gen(function* () {
      const receipt = `{"sequence":1,"hash":"${"a".repeat(64)}"}`
      const target = yield* server((_, response) =>
        response.writeHead(200, { "content-type": "application/json" }).end(receipt)
      )
      const agent = yield* Effect.acquireRelease(
        Effect.sync(() => deliveryAgent(ca.caPem)),
        (made) => Effect.sync(() => made.destroy())
      )
      expect(yield* shipEnvelope(target.url, ENVELOPE, 1, "a".repeat(64), agent)).toEqual({ _tag: "Acknowledged" })
      const kept = Object.values(agent.freeSockets).flat()
      expect(kept).toHaveLength(1)
      expect(kept[0]!.timeout).toBe(DELIVERY_IDLE_MS)
      expect(DELIVERY_IDLE_MS).toBeLessThan(5_000)
    })
  )

  it.scoped("a redirect is a failure (http_302) and is never followed", () =>
    Effect.gen(function* () {
      const target = yield* server((_, response) =>
        response
          .writeHead(200, { "content-type": "application/json" })
          .end('{"sequence":1,"hash":"' + "a".repeat(64) + '"}')
      )
      const redirecting = yield* server((_, response) => response.writeHead(302, { location: target.url }).end())
      const outcome = yield* ship(redirecting.url)
      expect(outcome).toEqual({ _tag: "Failed", errorClass: "http_302" })
      expect(redirecting.received).toEqual([ENVELOPE])
      expect(target.received).toEqual([])
    })
  )

  it.scoped("a receiver slower than 10 s fails as timeout at 10 s, not before", () =>
    Effect.gen(function* () {
      expect(ARCHIVE_TIMEOUT_MS).toBe(10_000)
      const arrived = yield* Deferred.make<void>()
      const slow = yield* server(() => Deferred.unsafeDone(arrived, Effect.void))
      const shipping = yield* Effect.fork(ship(slow.url))
      yield* Deferred.await(arrived)
      yield* TestClock.adjust(ARCHIVE_TIMEOUT_MS - 1)
      expect(Option.isNone(yield* Fiber.poll(shipping))).toBe(true)
      yield* TestClock.adjust(1)
      expect(yield* Fiber.join(shipping)).toEqual({ _tag: "Failed", errorClass: "timeout" })
      expect(slow.received).toEqual([ENVELOPE])
    })
  )
})
