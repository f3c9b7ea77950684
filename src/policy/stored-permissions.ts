import { ParseResult, Schema } from "effect"
import { type AccessEntry, type Permissions, PermissionsFromJson, type ResourceRule, Role } from "./permissions.js"

/**
 * The permission object of a stored group, read back. Every stored object was validated in full by
 * `Permissions` when it was written (src/policy/writes.ts), and decoding it again with that schema costs
 * about 100 ms for a group of 256 entries × 4 rules × 12 values — per group, each time the policy is
 * loaded (docs/decisions.md, "Reading stored permission objects"). So rows are read by this check of
 * their shape instead: every field of the right type, defaults filled in, roles from the closed list;
 * anything else — a hand-edited row — fails the whole read, as before (closed). Lengths and pointer
 * syntax are not checked again: a rule whose pointer does not parse never matches (src/policy/grant.ts).
 */

class Malformed extends Error {}

const fail = (path: string): never => {
  throw new Malformed(`${path}: not as the gateway writes it`)
}

const record = (value: unknown, path: string): Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : fail(path)

const strings = (value: unknown, path: string): ReadonlyArray<string> => {
  if (value === undefined) return []
  if (!Array.isArray(value)) return fail(path)
  for (const item of value) if (typeof item !== "string") fail(path)
  return value as ReadonlyArray<string>
}

const flag = (value: unknown, path: string): boolean =>
  value === undefined ? false : typeof value === "boolean" ? value : fail(path)

const list = <A>(value: unknown, path: string, item: (value: unknown, path: string) => A): ReadonlyArray<A> => {
  if (value === undefined) return []
  if (!Array.isArray(value)) return fail(path)
  return value.map((element, index) => item(element, `${path}[${index}]`))
}

const isRole = Schema.is(Role)

const rule = (value: unknown, path: string): ResourceRule => {
  const fields = record(value, path)
  if (typeof fields["argument"] !== "string") fail(`${path}.argument`)
  const allowed = strings(fields["allowed_values"], `${path}.allowed_values`)
  return { argument: fields["argument"] as string, allowed_values: allowed }
}

const entry = (value: unknown, path: string): AccessEntry => {
  const fields = record(value, path)
  if (typeof fields["endpoint_id"] !== "string") fail(`${path}.endpoint_id`)
  return {
    endpoint_id: fields["endpoint_id"] as string,
    tools: strings(fields["tools"], `${path}.tools`),
    allow_write_requests: flag(fields["allow_write_requests"], `${path}.allow_write_requests`),
    resource_rules: list(fields["resource_rules"], `${path}.resource_rules`, rule),
    prompts: strings(fields["prompts"], `${path}.prompts`),
    read_resources: flag(fields["read_resources"], `${path}.read_resources`),
    subscribe: flag(fields["subscribe"], `${path}.subscribe`)
  }
}

/** Reads a stored permission object (JSON text); throws on anything the gateway would not have written. */
export const readStoredPermissions = (text: string): Permissions => {
  const fields = record(JSON.parse(text), "permissions")
  const roles = strings(fields["roles"], "permissions.roles")
  for (const [index, role] of roles.entries()) if (!isRole(role)) fail(`permissions.roles[${index}]`)
  return {
    roles: roles as Permissions["roles"],
    scopes: strings(fields["scopes"], "permissions.scopes"),
    access: list(fields["access"], "permissions.access", entry)
  }
}

/** The `permissions` column as the repositories decode it: text in, Permissions out; written as `PermissionsFromJson` writes. */
export const StoredPermissions: Schema.Schema<Permissions, string> = Schema.transformOrFail(
  Schema.String,
  Schema.declare((value: unknown): value is Permissions => typeof value === "object" && value !== null),
  {
    strict: true,
    decode: (text, _, ast) => {
      try {
        return ParseResult.succeed(readStoredPermissions(text))
      } catch (error) {
        return ParseResult.fail(new ParseResult.Type(ast, text, error instanceof Error ? error.message : String(error)))
      }
    },
    encode: (permissions) => ParseResult.succeed(Schema.encodeSync(PermissionsFromJson)(permissions))
  }
)
