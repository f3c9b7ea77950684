import { Duration, Schema } from "effect"
import { codePointLabel } from "../text.js"
import { DurationFromString } from "./duration.js"

/**
 * The YAML configuration as an `effect/Schema` model (docs/configuration.md).
 * Field names are the YAML keys. Cross-field rules live in `rules.ts`; this file is shapes only.
 */

const NonEmpty = Schema.String.pipe(Schema.minLength(1))
const Url = NonEmpty.pipe(
  // Messages never echo the value: the loader appends it, unless it came from the environment.
  Schema.filter((text) => URL.canParse(text) || "expected an absolute URL"),
  Schema.annotations({ identifier: "URL" })
)
const Secret = Schema.Redacted(NonEmpty)
const withDefault = <S extends Schema.Schema.AnyNoContext>(schema: S, value: () => Schema.Schema.Type<S>) =>
  Schema.optionalWith(schema, { default: value })

export const Upstream = Schema.Struct({
  protocol: Schema.Literal("oidc", "oauth2"),
  issuer: Url,
  client_id: NonEmpty,
  client_secret_env: NonEmpty,
  token_auth_method: withDefault(
    Schema.Literal("client_secret_post", "client_secret_basic"),
    () => "client_secret_basic" as const
  ),
  scopes: withDefault(Schema.Array(NonEmpty), () => ["openid"]),
  name_claim: Schema.optional(NonEmpty),
  tenant_claim: Schema.optional(NonEmpty),
  tenant_value: Schema.optional(NonEmpty),
  groups_claim: Schema.optional(NonEmpty),
  departments_claim: Schema.optional(NonEmpty),
  authorization_url: Schema.optional(Url),
  token_url: Schema.optional(Url),
  userinfo_url: Schema.optional(Url),
  subject_claim: Schema.optional(NonEmpty),
  success_claim: Schema.optional(NonEmpty),
  success_value: Schema.optional(Schema.String),
  /** PEM certificates trusted for the upstream's endpoints instead of the system roots (a private CA). */
  ca_file: Schema.optional(NonEmpty)
})

export const DownstreamClient = Schema.Struct({
  id: NonEmpty,
  redirect_uris: Schema.Array(Url).pipe(Schema.minItems(1)),
  resources: Schema.Array(Url).pipe(Schema.minItems(1))
})

export const Sso = Schema.Struct({
  upstream: Schema.optional(Upstream),
  clients: withDefault(Schema.Array(DownstreamClient), () => []),
  directory_token_env: Schema.optional(NonEmpty),
  bootstrap_subjects: withDefault(Schema.Array(NonEmpty), () => [])
})

export const External = Schema.Struct({
  jwks_url: Url,
  /** PEM certificates to trust for the JWKS fetch instead of the system roots (a private issuer CA). */
  ca_file: Schema.optional(NonEmpty),
  algorithms: withDefault(
    Schema.Array(Schema.Literal("EdDSA", "ES256", "ES384", "RS256", "PS256")),
    () => ["RS256", "ES256", "EdDSA"] as const
  )
})

export const Auth = Schema.Struct({
  mode: withDefault(Schema.Literal("builtin", "external"), () => "builtin" as const),
  issuer: Url,
  enterprise_membership_max_age: withDefault(DurationFromString, () => Duration.hours(24)),
  external: Schema.optional(External),
  sso: withDefault(Sso, () => ({ clients: [], bootstrap_subjects: [] }))
})

export const Server = Schema.Struct({
  public_url: Url,
  listen: NonEmpty,
  /** Peers whose `X-Forwarded-For` names the client (IP addresses or CIDR blocks); reloadable. */
  trusted_proxies: withDefault(Schema.Array(NonEmpty), () => []),
  /** Open connections per listener before new ones are kept for health probes only; reloadable. */
  max_connections: withDefault(Schema.Int.pipe(Schema.between(16, 1_000_000)), () => 8192),
  /**
   * Bytes of backend answers held at once across all calls (src/mcp/upstream/answer-budget.ts); at
   * least one answer of the largest size a call accepts (32 MiB); reloadable. Default 64 MiB:
   * docs/operations.md, "Memory held for backend answers".
   */
  max_answer_bytes_in_flight: withDefault(
    Schema.Int.pipe(Schema.between(32 * 1024 * 1024, 2 ** 40)),
    () => 64 * 1024 * 1024
  )
})

export const PolicyChanges = Schema.Struct({
  enabled: withDefault(Schema.Boolean, () => false),
  required_scopes: withDefault(Schema.Array(NonEmpty), () => []),
  subjects: Schema.optional(Schema.Array(NonEmpty)),
  require_step_up: withDefault(Schema.Boolean, () => false)
})

export const Notifications = Schema.Struct({ url: Url, secret: Secret, ca_file: Schema.optional(NonEmpty) })

export const AuditArchive = Schema.Struct({
  url: Url,
  key_id: NonEmpty,
  signing_key: Secret,
  ca_file: Schema.optional(NonEmpty)
})

export const Admin = Schema.Struct({
  mode: withDefault(Schema.Literal("local", "remote"), () => "local" as const),
  listen: withDefault(NonEmpty, () => "127.0.0.1:8081"),
  public_url: Schema.optional(Url),
  client_id: Schema.optional(NonEmpty),
  // At least one: with none, every enabled user with a token for the admin resource would administer.
  required_scopes: withDefault(
    Schema.Array(NonEmpty).pipe(Schema.minItems(1, { message: () => "must name at least one scope" })),
    () => ["gateway:admin"]
  ),
  approvals: withDefault(
    Schema.Struct({
      policy_changes: withDefault(PolicyChanges, () => ({
        enabled: false,
        required_scopes: [],
        require_step_up: false
      })),
      notifications: Schema.optional(Notifications),
      audit_archive: Schema.optional(AuditArchive)
    }),
    () => ({ policy_changes: { enabled: false, required_scopes: [], require_step_up: false } })
  )
})

export const ClientAuthorization = Schema.Struct({
  enabled: withDefault(Schema.Boolean, () => false),
  client_id: Schema.optional(NonEmpty)
})

const JsonPointer = Schema.String.pipe(
  Schema.filter((text) => text === "" || text.startsWith("/") || `expected a JSON Pointer starting with "/"`)
)

export const ResourceCondition = Schema.Struct({
  argument: JsonPointer,
  allowed_values: Schema.Array(Schema.String).pipe(Schema.minItems(1))
})

export const ApprovalPolicy = Schema.Struct({
  required_approvals: withDefault(Schema.Literal(1, 2), () => 1 as const),
  require_step_up: withDefault(Schema.Boolean, () => false),
  operation_id_argument: Schema.optional(JsonPointer),
  status_tool: Schema.optional(NonEmpty),
  approvers: withDefault(Schema.Array(Schema.Struct({ subjects: Schema.Array(NonEmpty) })), () => []),
  risk_rules: withDefault(
    Schema.Array(
      Schema.Struct({
        resources: Schema.Array(ResourceCondition).pipe(Schema.minItems(1)),
        required_approvals: Schema.optional(Schema.Literal(1, 2)),
        require_step_up: Schema.optional(Schema.Boolean)
      })
    ),
    () => []
  )
})

/**
 * Write approvals as a whole (docs/approvals.md): how long a request waits for its reviewers, how long an
 * approved write may be resumed, how long finished details are kept, and what a reviewer's step-up must
 * show. Reloadable: each approval keeps the deadlines it was given.
 */
export const Approvals = Schema.Struct({
  expires_after: withDefault(DurationFromString, () => Duration.hours(24)),
  execute_within: withDefault(DurationFromString, () => Duration.hours(1)),
  retention: withDefault(DurationFromString, () => Duration.days(30)),
  step_up: withDefault(
    Schema.Struct({
      acr_values: withDefault(Schema.Array(NonEmpty), () => []),
      max_age: withDefault(DurationFromString, () => Duration.minutes(5))
    }),
    () => ({ acr_values: [], max_age: Duration.minutes(5) })
  )
})

export const approvalsDefault = (): typeof Approvals.Type => ({
  expires_after: Duration.hours(24),
  execute_within: Duration.hours(1),
  retention: Duration.days(30),
  step_up: { acr_values: [], max_age: Duration.minutes(5) }
})

/** An original tool name, or a prefix ending in `*` (`search_*`; `*` alone matches every tool). */
const ToolPattern = NonEmpty.pipe(
  Schema.filter((text) => !text.slice(0, -1).includes("*") || "only a single trailing * is supported")
)

/**
 * Why `pattern` is refused when a rule is written, or undefined. Only the characters of MCP tool names
 * (SEP-986: letters, digits, `_`, `-`, `.`; a tool named otherwise is never exposed,
 * src/mcp/catalog/naming.ts): a pattern holding another — an invisible U+034F after `delete_note`,
 * say — would match no tool, and the tool it seemed to name would fall to the next rule (a `*` rule
 * publishing it as a read tool without approval). Checked where rules are written (the YAML file, a
 * managed source's create or update), not where stored ones are read back: a definition saved before
 * the check still loads, its pattern matching nothing as it always did (docs/decisions.md).
 */
export const toolPatternProblem = (pattern: string): string | undefined => {
  const name = pattern.endsWith("*") ? pattern.slice(0, -1) : pattern
  if (name.length > 128) return "a tool name has at most 128 characters"
  const other = /[^A-Za-z0-9_.-]/u.exec(name)
  if (other === null) return undefined
  return `holds ${codePointLabel(other[0])} at index ${other.index}: MCP tool names have only letters, digits, _, - and . (this pattern would match no tool)`
}

export const ToolRule = Schema.Struct({
  tools: Schema.Array(ToolPattern).pipe(Schema.minItems(1)),
  publish: withDefault(Schema.Boolean, () => true),
  write: withDefault(Schema.Boolean, () => false),
  approval: Schema.optional(ApprovalPolicy)
})

/** A backend's rules as stored and read back (a managed backend's): patterns not checked again. */
export const storedToolRules = withDefault(Schema.Array(ToolRule), () => [])

/** A rule as the YAML file writes it: each pattern checked (`toolPatternProblem`). */
const WrittenToolRule = Schema.Struct({
  ...ToolRule.fields,
  tools: Schema.Array(ToolPattern.pipe(Schema.filter((pattern) => toolPatternProblem(pattern) ?? true))).pipe(
    Schema.minItems(1)
  )
})

export const BackendCredentials = Schema.Union(
  Schema.Struct({ type: Schema.Literal("bearer"), token: Secret }),
  Schema.Struct({ type: Schema.Literal("basic"), username: NonEmpty, password: Secret })
)

export const BackendOAuth = Schema.Struct({
  type: Schema.Literal("client_credentials"),
  issuer: Url,
  client_id: NonEmpty,
  client_secret: Secret,
  scopes: withDefault(Schema.Array(NonEmpty), () => [])
})

/**
 * How a backend's tools, prompts and resources are named to clients (docs/mcp.md, "Naming"). The default
 * `<id>__` prefix and `gateway://<id>/` URIs keep every backend's names apart; `prefix: ""` and
 * `resource_uris: original` expose the backend's own names (a single backend, or backends whose names
 * never collide — a name two backends expose is exposed by neither).
 */
export const BackendNaming = Schema.Struct({
  prefix: Schema.optional(
    Schema.String.pipe(
      Schema.pattern(/^[A-Za-z0-9_.-]{0,64}$/, {
        message: () => "expected at most 64 letters, digits, _, - and . (an empty prefix exposes the original names)"
      })
    )
  ),
  resource_uris: withDefault(Schema.Literal("gateway", "original"), () => "gateway" as const)
})

/** A backend's id, and every managed tool source's (src/sources/schema.ts): the key access entries grant. */
export const EndpointId = NonEmpty.pipe(
  Schema.pattern(/^[a-z0-9][a-z0-9_-]{0,62}$/, {
    message: () => "expected a lowercase id of letters, digits, _ and -"
  }),
  // Exposed names are `<id>__<name>` (docs/mcp.md): these two rules keep that mapping one-to-one.
  Schema.filter((id) => (!id.includes("__") && !id.endsWith("_")) || 'must not contain "__" or end with "_"')
)

export const Backend = Schema.Struct({
  id: EndpointId,
  url: Url,
  allow_insecure_http: withDefault(Schema.Boolean, () => false),
  headers: withDefault(Schema.Record({ key: NonEmpty, value: Schema.String }), () => ({})),
  credentials: Schema.optional(BackendCredentials),
  oauth: Schema.optional(BackendOAuth),
  required: withDefault(Schema.Boolean, () => false),
  required_scopes: withDefault(Schema.Array(NonEmpty), () => []),
  tool_rules: withDefault(Schema.Array(WrittenToolRule), () => []),
  naming: withDefault(BackendNaming, () => ({ resource_uris: "gateway" as const })),
  timeouts: withDefault(
    Schema.Struct({
      connect: withDefault(DurationFromString, () => Duration.seconds(10)),
      call: withDefault(DurationFromString, () => Duration.seconds(60))
    }),
    () => ({ connect: Duration.seconds(10), call: Duration.seconds(60) })
  )
})

export const Storage = Schema.Union(
  Schema.Struct({ type: Schema.Literal("sqlite"), path: NonEmpty }),
  Schema.Struct({ type: Schema.Literal("postgres"), url: Schema.Redacted(NonEmpty) })
)

/** How the aggregated catalog is kept and served (docs/mcp.md); reloadable. */
export const Catalog = Schema.Struct({
  refresh_interval: withDefault(DurationFromString, () => Duration.minutes(5)),
  page_size: withDefault(Schema.Int.pipe(Schema.between(1, 10_000)), () => 1000)
})

/**
 * Metrics and traces (docs/operations.md, "Metrics" and "Traces"). `metrics_listen`, `otlp_endpoint`,
 * `service_instance_id` and `trace_queue_size` are static (a listener and an exporter live for the
 * process); `trust_incoming_trace` is reloadable.
 */
export const Observability = Schema.Struct({
  /** A listener of its own for `/metrics` (besides the loopback admin listener); absent: none. */
  metrics_listen: Schema.optional(NonEmpty),
  /** OTLP/HTTP traces endpoint (`…/v1/traces`); absent: tracing is off and costs nothing. */
  otlp_endpoint: Schema.optional(Url),
  /** Whether a client's `traceparent`/`tracestate` on /mcp continues its trace; off: a new root each request. */
  trust_incoming_trace: withDefault(Schema.Boolean, () => false),
  /** `service.instance.id` of exported spans; absent: a random id per process. */
  service_instance_id: Schema.optional(NonEmpty),
  /** Finished spans waiting for export at most; past it spans are dropped and counted. */
  trace_queue_size: withDefault(Schema.Int.pipe(Schema.between(64, 1_000_000)), () => 4096)
})

export const GatewayConfig = Schema.Struct({
  server: Server,
  storage: withDefault(Storage, () => ({ type: "sqlite" as const, path: "./data/gateway.db" })),
  auth: Auth,
  allowed_origins: withDefault(Schema.Array(Url), () => []),
  drain_timeout: withDefault(DurationFromString, () => Duration.seconds(10)),
  request_timeout: withDefault(DurationFromString, () => Duration.seconds(60)),
  catalog: withDefault(Catalog, () => ({ refresh_interval: Duration.minutes(5), page_size: 1000 })),
  log_level: withDefault(Schema.Literal("debug", "info", "warn", "error"), () => "info" as const),
  admin: withDefault(Admin, () => Schema.decodeSync(Admin)({})),
  client_authorization: withDefault(ClientAuthorization, () => ({ enabled: false })),
  approvals: withDefault(Approvals, approvalsDefault),
  backends: withDefault(Schema.Array(Backend), () => []),
  observability: withDefault(Observability, () => ({ trust_incoming_trace: false, trace_queue_size: 4096 }))
})

export type GatewayConfig = typeof GatewayConfig.Type
export type BackendConfig = typeof Backend.Type
export type ApprovalPolicy = typeof ApprovalPolicy.Type
export type ToolRule = typeof ToolRule.Type
export type StorageConfig = typeof Storage.Type
