import type { CallToolResult } from "@modelcontextprotocol/client"
import { Context, Data, type Effect } from "effect"
import type { HttpEndpoint, HttpToolSpec } from "../schema.js"

/** A call's arguments do not match the tool's input schema: the caller is told which (JSON-RPC -32602). */
export class HttpToolInvalidArguments extends Data.TaggedError("HttpToolInvalidArguments")<{
  readonly message: string
}> {}

/**
 * Calls of HTTP tools (docs/tool-sources.md): each is one HTTPS request built from the tool's URL template
 * and the call's arguments. A failure of the request itself (timeout, an answer too large, a redirect to
 * another origin, a connection or TLS error, an HTTP error status) is a tool result with `isError: true`
 * and a message that holds no secret.
 */
export class HttpTools extends Context.Tag("gateway/HttpTools")<
  HttpTools,
  {
    readonly call: (
      endpoint: HttpEndpoint,
      tool: HttpToolSpec,
      args: Record<string, unknown> | undefined,
      signal: AbortSignal
    ) => Effect.Effect<CallToolResult, HttpToolInvalidArguments>
  }
>() {}
