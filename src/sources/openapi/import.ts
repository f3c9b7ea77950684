import { Data, Effect } from "effect"
import type { ToolRule } from "../../config/schema.js"
import type { HttpToolSpec } from "../schema.js"

/** An OpenAPI document that cannot be imported, and the place in it at fault (RFC 6901). */
export class OpenApiInvalid extends Data.TaggedError("OpenApiInvalid")<{
  readonly pointer: string
  readonly message: string
}> {}

export interface OpenApiImported {
  readonly tools: ReadonlyArray<HttpToolSpec>
  readonly document_sha256: string
  /** GET/HEAD tools in a read rule, the rest in a write rule: used when the import gives no tool_rules. */
  readonly tool_rules: ReadonlyArray<typeof ToolRule.Type>
  readonly title: string
  readonly version: string
}

export interface OpenApiInput {
  readonly source: { readonly url: string } | { readonly document: unknown }
  readonly server_url?: string
  /** PEM CA certificates to trust when fetching `source.url`; the system roots otherwise. */
  readonly ca?: string
}

/** An OpenAPI 3.0 or 3.1 document (≤ 32 MiB), its `$ref`s resolved, as HTTP tools (docs/tool-sources.md). */
export const importOpenApi = (_input: OpenApiInput): Effect.Effect<OpenApiImported, OpenApiInvalid> =>
  Effect.fail(new OpenApiInvalid({ pointer: "", message: "OpenAPI imports are not available in this build" }))
