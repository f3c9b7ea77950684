import { Context, Duration, Effect, Exit, Layer, Redacted, Scope } from "effect"
import { Agent } from "undici"
import { httpToolsLayer } from "../src/sources/http/live.js"
import { HttpTools } from "../src/sources/http/service.js"
import type { HttpEndpoint, HttpToolSpec } from "../src/sources/schema.js"
import { startHttpsToolServer } from "../test/support/https-tool-server.js"
import { makeTestCa } from "../test/support/test-ca.js"
import { percentile } from "./support/stats.js"
import { formatMs, formatTimes, type Table } from "./support/table.js"

export const name = "http-tools"

const WARMUP = 300
const ROUNDS = 10
const PER_ROUND = 300

/**
 * What HttpToolsLive adds to one HTTP tool call: argument validation (ajv), URL template expansion and
 * its shape check, headers, the bounded read and the answer mapping — against the same request sent with
 * undici directly (one kept-alive connection each, the same loopback HTTPS server, the same JSON
 * answer parsed). Sequential calls, rounds of the two interleaved so a machine that gets busier affects
 * both. In process: the gateway's /mcp path around a call is the same for a backend tool and an HTTP
 * tool, and is measured end to end by the `mcp` suite.
 */
export const run = async (): Promise<Table> => {
  const ca = makeTestCa()
  const server = await startHttpsToolServer(ca)
  const scope = Effect.runSync(Scope.make())
  const direct = new Agent({ connect: { ca: ca.caPem, rejectUnauthorized: true } })
  try {
    const context = await Effect.runPromise(Layer.buildWithScope(httpToolsLayer({ ca: ca.caPem }), scope))
    const tools = Context.get(context, HttpTools)
    const endpoint: HttpEndpoint = {
      kind: "http_tool",
      id: "bench",
      allow_insecure_http: false,
      headers: { "X-Api-Key": Redacted.make("bench-api-key-0123456789") },
      credentials: { type: "bearer", token: Redacted.make("bench-token-0123456789") },
      required_scopes: [],
      tool_rules: [],
      naming: { resource_uris: "gateway" },
      timeouts: { call: Duration.seconds(30) },
      max_answer_bytes: 1024 * 1024,
      tools: []
    }
    const tool: HttpToolSpec = {
      name: "get_user",
      description: "",
      method: "GET",
      url: `${server.origin}/echo/users/{id}{?fields}`,
      input_schema: {
        type: "object",
        properties: { id: { type: "string", pattern: "^[0-9]+$" }, fields: { type: "string" } },
        required: ["id"],
        additionalProperties: false
      },
      argument_headers: {}
    }
    const args = { id: "42", fields: "name,email" }
    const signal = new AbortController().signal
    // Both run inside one fiber, as a call does in the gateway (no Effect.runPromise per call); the
    // undici request is bridged with Effect.promise, as the service bridges its own.
    const viaService = Effect.flatMap(tools.call(endpoint, tool, args, signal), (result) =>
      result.isError === true ? Effect.die(new Error("the HTTP tool call failed")) : Effect.void
    )
    const viaUndici = Effect.promise(async () => {
      const answer = await direct.request({
        origin: server.origin,
        path: "/echo/users/42?fields=name%2Cemail",
        method: "GET",
        headers: {
          accept: "application/json",
          "x-api-key": "bench-api-key-0123456789",
          authorization: "Bearer bench-token-0123456789"
        }
      })
      JSON.parse(await answer.body.text())
    })
    const time = <E>(work: Effect.Effect<void, E>, count: number, into: Array<number>) =>
      Effect.gen(function* () {
        for (let index = 0; index < count; index++) {
          const started = performance.now()
          yield* work
          into.push(performance.now() - started)
        }
      })
    const service: Array<number> = []
    const undici: Array<number> = []
    await Effect.runPromise(
      Effect.gen(function* () {
        yield* time(viaService, WARMUP, [])
        yield* time(viaUndici, WARMUP, [])
        for (let round = 0; round < ROUNDS; round++) {
          yield* time(viaService, PER_ROUND, service)
          yield* time(viaUndici, PER_ROUND, undici)
          // The server records every request: keep its memory flat.
          server.requests.length = 0
        }
      })
    )
    const p50 = (values: ReadonlyArray<number>) => percentile(values, 50)
    const p99 = (values: ReadonlyArray<number>) => percentile(values, 99)
    return {
      title: "HTTP tool call: HttpToolsLive against undici direct (same loopback HTTPS server)",
      columns: ["path", "p50", "p99", "added p50", "ratio (p50)"],
      rows: [
        ["undici direct (request, JSON parse)", formatMs(p50(undici)), formatMs(p99(undici)), "—", "1.0×"],
        [
          "HttpTools.call (validate, expand, send, map)",
          formatMs(p50(service)),
          formatMs(p99(service)),
          formatMs(p50(service) - p50(undici)),
          formatTimes(p50(service), p50(undici))
        ]
      ],
      notes: [
        `${(ROUNDS * PER_ROUND).toLocaleString("en-US")} sequential calls each (rounds of ${PER_ROUND}, interleaved) after ` +
          `${WARMUP} warm-up; in process, in one fiber, one kept-alive TLS connection each. The issue's target — an HTTP tool's ` +
          "call adds no more than a backend tool's — is measured end to end through /mcp after the catalog part is merged."
      ]
    }
  } finally {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    await direct.destroy()
    await server.close()
    ca.remove()
  }
}
