import { Schema } from "effect"
import { parsePointer } from "./json-pointer.js"

/**
 * The permission object of a permission group (docs/access-policy.md, "Permission object"): roles,
 * scopes and access entries. Users never carry one; they inherit it from the groups they belong to.
 * The same schema decodes Management API bodies (strictly: unknown keys are refused) and stored rows.
 */

/** Administrative roles; each maps to administrative scopes (src/policy/roles.ts). */
export const Role = Schema.Literal("admin", "approver", "security_reviewer")
export type Role = typeof Role.Type

const Text = (max: number) =>
  Schema.String.pipe(
    Schema.minLength(1, { message: () => "must not be empty" }),
    Schema.maxLength(max, { message: () => `must be at most ${max} characters` })
  )

const List = <A, I>(item: Schema.Schema<A, I>, max: number) =>
  Schema.Array(item).pipe(Schema.maxItems(max, { message: () => `must have at most ${max} items` }))

const withDefault = <S extends Schema.Schema.AnyNoContext>(schema: S, value: () => Schema.Schema.Type<S>) =>
  Schema.optionalWith(schema, { default: value })

/** A JSON Pointer (RFC 6901) into the tool's arguments. */
export const ArgumentPointer = Schema.String.pipe(
  Schema.maxLength(256, { message: () => "must be at most 256 characters" }),
  Schema.filter((text) => parsePointer(text) !== undefined || 'expected a JSON Pointer such as "/account/id"')
)

/** Scope names as RFC 6749 §3.3 writes them: printable ASCII except space, `"` and `\`. */
export const ScopeName = Text(128).pipe(
  Schema.pattern(/^[\x21\x23-\x5B\x5D-\x7E]+$/, { message: () => "expected a scope name (no spaces or quotes)" })
)

/** A backend id, as `backends[].id` allows it. */
export const EndpointId = Schema.String.pipe(
  Schema.pattern(/^[a-z0-9][a-z0-9_-]{0,62}$/, { message: () => "expected a backend id" })
)

/** An argument must be a string equal to one of `allowed_values`; missing, empty or non-string denies. */
export const ResourceRule = Schema.Struct({
  argument: ArgumentPointer,
  allowed_values: List(Text(1024), 1024).pipe(Schema.minItems(1, { message: () => "must not be empty" }))
})
export type ResourceRule = typeof ResourceRule.Type

export const AccessEntry = Schema.Struct({
  endpoint_id: EndpointId,
  /** Exact original tool names of that backend, or `["*"]`: every tool it publishes (src/policy/tool-names.ts); an empty list grants no tool. */
  tools: List(Text(128), 1024),
  /** Write tools need it; it never bypasses per-operation approval. */
  allow_write_requests: withDefault(Schema.Boolean, () => false),
  /** Every rule must hold for a call to match this entry. */
  resource_rules: withDefault(List(ResourceRule, 32), () => []),
  /** Exact original prompt names of that backend (`prompts/list`, `prompts/get`). */
  prompts: withDefault(List(Text(128), 1024), () => []),
  /** `resources/list`, `resources/templates/list`, `resources/read` and resource completion. */
  read_resources: withDefault(Schema.Boolean, () => false),
  /** List-change notifications (`subscriptions/listen`) about that backend. */
  subscribe: withDefault(Schema.Boolean, () => false)
})
export type AccessEntry = typeof AccessEntry.Type

export const Permissions = Schema.Struct({
  roles: withDefault(List(Role, 3), () => []),
  scopes: withDefault(List(ScopeName, 64), () => []),
  access: withDefault(List(AccessEntry, 256), () => [])
})
export type Permissions = typeof Permissions.Type

export const noPermissions: Permissions = { roles: [], scopes: [], access: [] }

/** Stored permission objects are the gateway's own writing; decoded leniently, re-validated on every write. */
export const PermissionsFromJson = Schema.parseJson(Permissions)
export const encodePermissions = Schema.encodeSync(PermissionsFromJson)
export const decodeStoredPermissions = Schema.decodeUnknownSync(PermissionsFromJson)
