import { Duration, Schema } from "effect"
import { DurationFromString } from "../config/duration.js"
import { BackendCredentials, BackendNaming, EndpointId, ToolRule } from "../config/schema.js"

/**
 * Managed tool sources (docs/tool-sources.md): the shapes of the four kinds an administrator manages
 * through the Management API once managed storage is initialized — backends (the YAML `backends[]`
 * keys), HTTP tools, OpenAPI imports and tool groups. Every kind's `id` is an endpoint id: one namespace
 * across the four, the key permission groups grant (`access[].endpoint_id`).
 */

const NonEmpty = Schema.String.pipe(Schema.minLength(1))
const withDefault = <S extends Schema.Schema.AnyNoContext>(schema: S, value: () => Schema.Schema.Type<S>) =>
  Schema.optionalWith(schema, { default: value })

/** A JSON Pointer (RFC 6901) into a call's arguments. */
const ArgumentPointer = Schema.String.pipe(
  Schema.filter((text) => text.startsWith("/") || 'expected a JSON Pointer starting with "/"')
)

/** A tool name as backends spell them (MCP: letters, digits, `_`, `-`, `.`), 1–128 characters. */
export const ToolName = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z0-9_.-]{1,128}$/, {
    message: () => "expected 1 to 128 letters, digits, _, - and ."
  })
)

export const HttpMethod = Schema.Literal("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")

/** A JSON Schema object (draft 2020-12 or draft-07), validated when the tool is saved. */
export const InputSchema = Schema.Record({ key: Schema.String, value: Schema.Unknown })

/**
 * One HTTP tool: the one HTTPS request a call of it sends. The URL is an RFC 6570 template over the
 * call's arguments; its scheme, host and port are literal (no expression before the path), and every
 * value is percent-encoded so no argument can change the host or the path's shape.
 */
export const HttpToolSpec = Schema.Struct({
  name: ToolName,
  title: Schema.optional(Schema.String),
  description: withDefault(Schema.String, () => ""),
  method: HttpMethod,
  url: NonEmpty,
  input_schema: withDefault(InputSchema, () => ({ type: "object" })),
  /** The argument sent as the JSON request body (methods other than GET and HEAD). */
  body: Schema.optional(Schema.Struct({ argument: ArgumentPointer })),
  /** Request headers taken from arguments: header name → argument pointer (values without CR/LF). */
  argument_headers: withDefault(Schema.Record({ key: NonEmpty, value: ArgumentPointer }), () => ({}))
})
export type HttpToolSpec = typeof HttpToolSpec.Type

/** What an HTTP tool and an OpenAPI import share: how their requests reach the service, and their policy. */
const HttpEndpointFields = {
  id: EndpointId,
  allow_insecure_http: withDefault(Schema.Boolean, () => false),
  /** Fixed request headers; values are secrets (sealed at rest, never shown). */
  headers: withDefault(Schema.Record({ key: NonEmpty, value: Schema.Redacted(Schema.String) }), () => ({})),
  credentials: Schema.optional(BackendCredentials),
  required_scopes: withDefault(Schema.Array(NonEmpty), () => []),
  tool_rules: withDefault(Schema.Array(ToolRule), () => []),
  naming: withDefault(BackendNaming, () => ({ resource_uris: "gateway" as const })),
  timeouts: withDefault(Schema.Struct({ call: withDefault(DurationFromString, () => Duration.seconds(30)) }), () => ({
    call: Duration.seconds(30)
  })),
  /** Bytes of one answer the gateway reads; more fails the call. */
  max_answer_bytes: withDefault(Schema.Int.pipe(Schema.between(1, 32 * 1024 * 1024)), () => 1024 * 1024)
}

/** An HTTP tool resource: an endpoint with exactly one tool. */
export const HttpTool = Schema.Struct({ ...HttpEndpointFields, tool: HttpToolSpec })
export type HttpTool = typeof HttpTool.Type

/**
 * An OpenAPI import as stored: the endpoint, where its document came from, and the HTTP tools the
 * document yielded (derived at import time; a generation never fetches the document).
 */
export const OpenApiImport = Schema.Struct({
  ...HttpEndpointFields,
  source: Schema.Union(Schema.Struct({ url: NonEmpty }), Schema.Struct({ document: Schema.Unknown })),
  /** Replaces the document's `servers[0].url` as the base of every operation's URL. */
  server_url: Schema.optional(NonEmpty),
  document_sha256: Schema.optional(Schema.String),
  tools: withDefault(Schema.Array(HttpToolSpec), () => [])
})
export type OpenApiImport = typeof OpenApiImport.Type

/** What a generation runs for an HTTP tool or an OpenAPI import: an endpoint whose tools are HTTP requests. */
export interface HttpEndpoint {
  readonly kind: "http_tool" | "openapi_import"
  readonly id: string
  readonly allow_insecure_http: boolean
  readonly headers: HttpTool["headers"]
  readonly credentials: HttpTool["credentials"]
  readonly required_scopes: ReadonlyArray<string>
  readonly tool_rules: HttpTool["tool_rules"]
  readonly naming: HttpTool["naming"]
  readonly timeouts: HttpTool["timeouts"]
  readonly max_answer_bytes: number
  readonly tools: ReadonlyArray<HttpToolSpec>
}

/**
 * A tool group: published tools drawn from several endpoints (backends, HTTP tools, OpenAPI imports;
 * not other groups), granted as one endpoint. A member names an original tool of its endpoint, or a
 * `prefix*` of them; only tools that endpoint publishes can be members.
 */
export const ToolGroup = Schema.Struct({
  id: EndpointId,
  description: withDefault(Schema.String, () => ""),
  members: Schema.Array(Schema.Struct({ endpoint: EndpointId, tool: NonEmpty })).pipe(Schema.minItems(1)),
  required_scopes: withDefault(Schema.Array(NonEmpty), () => []),
  /** The group's own publication; by default every member is published, keeping its write flag. */
  tool_rules: withDefault(Schema.Array(ToolRule), () => [{ tools: ["*"], publish: true, write: false }]),
  naming: withDefault(BackendNaming, () => ({ resource_uris: "gateway" as const }))
})
export type ToolGroup = typeof ToolGroup.Type

/** The managed sources a generation composes beside `config.backends` (src/sources/compose.ts). */
export interface ComposedSources {
  /** The database supplies backends: the YAML `backends[]` were imported once and no longer apply. */
  readonly managed: boolean
  readonly http: ReadonlyArray<HttpEndpoint>
  readonly toolGroups: ReadonlyArray<ToolGroup>
}

export const noManagedSources: ComposedSources = { managed: false, http: [], toolGroups: [] }

/** Every endpoint's required scopes: the backends', then the HTTP endpoints' and tool groups' (with repeats). */
export const endpointScopes = (
  backends: ReadonlyArray<{ readonly required_scopes: ReadonlyArray<string> }>,
  sources: ComposedSources | undefined
): ReadonlyArray<string> =>
  [...backends, ...(sources?.http ?? []), ...(sources?.toolGroups ?? [])].flatMap(
    (endpoint) => endpoint.required_scopes
  )

export const SourceKind = Schema.Literal("backend", "http_tool", "openapi_import", "tool_group")
export type SourceKind = typeof SourceKind.Type
