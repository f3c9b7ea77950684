import { createServer, type Socket } from "node:net"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import { StoreError } from "../../src/store/store.js"
import { storeLayer } from "../support/databases.js"

const refusal = (url: string) =>
  Effect.gen(function* () {
    const started = Date.now()
    const error = yield* Effect.flip(
      Effect.scoped(Layer.build(storeLayer({ type: "postgres", url: Redacted.make(url) })))
    )
    expect(error).toBeInstanceOf(StoreError)
    return { message: error.message, elapsedMs: Date.now() - started }
  })

/** Accepts TCP connections and never says a word, like a host behind a dropping firewall. */
const silentServer = Effect.acquireRelease(
  Effect.async<{ readonly port: number; readonly close: () => void }>((resume) => {
    const sockets = new Set<Socket>()
    const server = createServer((socket) => sockets.add(socket))
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const close = () => {
        server.close()
        for (const socket of sockets) socket.destroy()
      }
      resume(Effect.succeed({ port: typeof address === "object" && address !== null ? address.port : 0, close }))
    })
  }),
  ({ close }) => Effect.sync(close)
).pipe(Effect.map(({ port }) => port))

// These tests need the real clock: the connect timeout is what is under test.
describe("PostgreSQL store connection", () => {
  it.live("reports an unreachable server quickly, without the password", () =>
    Effect.gen(function* () {
      const { message, elapsedMs } = yield* refusal("postgres://gateway:s3cret-pw@127.0.0.1:1/gateway")
      expect(message).toMatch(/^cannot connect to PostgreSQL at 127\.0\.0\.1:1: .*ECONNREFUSED/)
      expect(message).not.toContain("s3cret-pw")
      expect(elapsedMs).toBeLessThan(2_000)
    })
  )

  it.scopedLive("gives up on a server that never answers within the 5 s connect timeout", () =>
    Effect.gen(function* () {
      const port = yield* silentServer
      const { message, elapsedMs } = yield* refusal(`postgres://gateway:s3cret-pw@127.0.0.1:${port}/gateway`)
      expect(message).toMatch(new RegExp(`^cannot connect to PostgreSQL at 127\\.0\\.0\\.1:${port}: .*time`, "i"))
      expect(message).not.toContain("s3cret-pw")
      expect(elapsedMs).toBeLessThan(7_000)
    })
  )

  it.live("names a missing database", () =>
    Effect.gen(function* () {
      const { message } = yield* refusal("postgres://postgres@127.0.0.1:5432/gw_test_does_not_exist")
      expect(message).toContain('database "gw_test_does_not_exist" does not exist')
    })
  )
})
