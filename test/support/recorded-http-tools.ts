import { Effect, Layer } from "effect"
import { HttpToolsLive } from "../../src/sources/http/live.js"
import { HttpTools } from "../../src/sources/http/service.js"
import { expandTemplate, parseTemplate } from "../../src/sources/http/template.js"
import type { HttpEndpoint, HttpToolSpec } from "../../src/sources/schema.js"
import { type LoopbackServer, serveLoopback } from "./mcp-http.js"

/**
 * The real HttpTools client (src/sources/http/live.ts) with a record of the calls it was asked to send:
 * which endpoint, which tool, and the URL its template expanded to. Tests of the catalog and ToolCalls
 * use it to see that a call reached (or never reached) the HTTP tool.
 */
export interface RecordedHttpTools {
  readonly layer: Layer.Layer<HttpTools>
  readonly calls: Array<{ readonly endpoint: string; readonly tool: string; readonly url: string }>
}

export const recordedHttpTools = (): RecordedHttpTools => {
  const calls: RecordedHttpTools["calls"] = []
  const layer = Layer.effect(
    HttpTools,
    Effect.map(HttpTools, (live) => ({
      call: (
        endpoint: HttpEndpoint,
        tool: HttpToolSpec,
        args: Record<string, unknown> | undefined,
        signal: AbortSignal
      ) => {
        const parsed = parseTemplate(tool.url)
        if (parsed.ok) {
          const expanded = expandTemplate(parsed.template, args ?? {})
          if (expanded.ok) calls.push({ endpoint: endpoint.id, tool: tool.name, url: expanded.url })
        }
        return live.call(endpoint, tool, args, signal)
      }
    }))
  ).pipe(Layer.provide(HttpToolsLive))
  return { layer, calls }
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
