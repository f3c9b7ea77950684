import { Effect, Layer } from "effect"
import { HttpTools } from "./service.js"

/**
 * The HttpTools of a build without the HTTP tools' client: every call is a tool result with
 * `isError: true`, so an HTTP tool in the catalog is refused plainly rather than crashing its call. The
 * generation uses it unless it is given another (GenerationOverrides.httpTools).
 */
export const HttpToolsUnavailable = Layer.succeed(HttpTools, {
  call: () =>
    Effect.succeed({
      content: [{ type: "text" as const, text: "HTTP tools are not available in this build" }],
      isError: true
    })
})
