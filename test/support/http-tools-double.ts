import { Effect, Layer } from "effect"
import { HttpToolInvalidArguments, HttpTools } from "../../src/sources/http/service.js"
import type { HttpEndpoint, HttpToolSpec } from "../../src/sources/schema.js"
import { type LoopbackServer, serveLoopback } from "./mcp-http.js"

/**
 * TEST DOUBLE of the HttpTools service (src/sources/http/service.ts), standing in for the HTTP part's
 * client (src/sources/http/live.ts, built by another part) in tests of the catalog and ToolCalls. It
 * does send a real HTTP request to the real server the tool's URL names, but keeps only what those
 * tests need: the `required` properties of the input schema are checked (a missing one is
 * HttpToolInvalidArguments), `{name}` expressions are expanded with percent-encoding, and the answer
 * becomes one text block (and `structuredContent` when it is a JSON object); a request that fails,
 * aborted included, is a result with `isError: true`, as the contract asks of the real client. Every
 * call is recorded.
 */
export interface HttpToolsDouble {
  readonly layer: Layer.Layer<HttpTools>
  readonly calls: Array<{ readonly endpoint: string; readonly tool: string; readonly url: string }>
}

const expand = (template: string, args: Record<string, unknown>) =>
  template.replace(/\{([a-z_]+)\}/g, (_, name: string) => encodeURIComponent(String(args[name] ?? "")))

export const httpToolsDouble = (): HttpToolsDouble => {
  const calls: HttpToolsDouble["calls"] = []
  const call = (
    endpoint: HttpEndpoint,
    tool: HttpToolSpec,
    args: Record<string, unknown> | undefined,
    signal: AbortSignal
  ) =>
    Effect.gen(function* () {
      const given = args ?? {}
      const required = (tool.input_schema["required"] as ReadonlyArray<string> | undefined) ?? []
      const missing = required.find((name) => given[name] === undefined)
      if (missing !== undefined) {
        return yield* Effect.fail(new HttpToolInvalidArguments({ message: `"${missing}" is required` }))
      }
      const url = expand(tool.url, given)
      calls.push({ endpoint: endpoint.id, tool: tool.name, url })
      // As the contract says of the real client: a failed request (here also an aborted one) is a result.
      const answer = yield* Effect.tryPromise(() =>
        fetch(url, { method: tool.method, signal }).then(async (response) => ({
          status: response.status,
          text: await response.text()
        }))
      ).pipe(Effect.orElseSucceed(() => ({ status: 599, text: "the request failed" })))
      let parsed: unknown
      try {
        parsed = JSON.parse(answer.text)
      } catch {
        parsed = undefined
      }
      return {
        content: [{ type: "text" as const, text: answer.text }],
        ...(parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)
          ? { structuredContent: parsed as Record<string, unknown> }
          : {}),
        isError: answer.status >= 400
      }
    })
  return { layer: Layer.succeed(HttpTools, { call }), calls }
}

/**
 * A real HTTP service on loopback answering every request with what it received: `{ method, path }`.
 * A path under `/slow/` answers after 20 s (or when the client goes away).
 */
export const startEchoService = (): Promise<LoopbackServer> =>
  serveLoopback(async (request) => {
    const url = new URL(request.url)
    if (url.pathname.startsWith("/slow/")) {
      await new Promise<void>((done) => {
        const timer = setTimeout(done, 20_000)
        request.signal.addEventListener("abort", () => {
          clearTimeout(timer)
          done()
        })
      })
    }
    return Response.json({ method: request.method, path: url.pathname })
  })
