import { isRecord } from "../../json.js"
import { hasControlCharacter } from "../../text.js"

/** Spec Limits (docs/directory.md, "Limits"). */
export const MAX_SNAPSHOT_BYTES = 8 * 1024 * 1024
export const MAX_SNAPSHOT_USERS = 10_000
export const MAX_SNAPSHOT_GROUPS = 2_000
export const MAX_USER_MEMBERSHIPS = 256
const MAX_TEXT = 256
/** Problems named in one refusal; the count of the rest follows. */
const MAX_PROBLEMS = 10

/**
 * Fields that would carry privilege: a snapshot says who exists, whether they are active and which
 * organization groups they are in — never what anyone may do. Any of these, at any depth, refuses
 * the whole snapshot.
 */
export const PRIVILEGE_FIELDS: ReadonlySet<string> = new Set([
  "roles",
  "role",
  "scopes",
  "scope",
  "permissions",
  "permission",
  "access",
  "managed_locally",
  "source_groups",
  "admin",
  "is_admin",
  "administrator",
  "privileges",
  "grants",
  "enabled",
  "status"
])

export interface SnapshotGroup {
  readonly kind: "group" | "department"
  readonly id: string
  readonly name: string
}

export interface SnapshotUser {
  readonly subject: string
  readonly name: string | undefined
  readonly active: boolean
  readonly groups: ReadonlyArray<string>
  readonly departments: ReadonlyArray<string>
}

export interface Snapshot {
  readonly version: number
  readonly groups: ReadonlyArray<SnapshotGroup>
  readonly users: ReadonlyArray<SnapshotUser>
}

export type SnapshotCheck =
  | { readonly _tag: "Valid"; readonly snapshot: Snapshot }
  | {
      readonly _tag: "Invalid"
      /** `privilege_field`, `limit_exceeded` or `invalid_snapshot`: the first problem's kind, for the log. */
      readonly reason: "privilege_field" | "limit_exceeded" | "invalid_snapshot"
      readonly problems: ReadonlyArray<string>
      readonly more: number
    }

const FIELDS = {
  top: new Set(["version", "groups", "users"]),
  group: new Set(["kind", "id", "name"]),
  user: new Set(["subject", "name", "active", "groups", "departments"])
}

/**
 * Why `version` is no snapshot version, precisely (a number JSON cannot hold exactly, a string, a
 * fraction, zero), or undefined. At most 2^53 - 1: every version is exact, as JSON numbers are read.
 * A version far ahead of the adapter's next one is still accepted here; an administrator can lower
 * it again (docs/directory.md, "Resetting a provider's version").
 */
const versionProblemOf = (version: unknown): string | undefined => {
  const expected = "expected a positive integer (at most 2^53 - 1 = 9007199254740991)"
  if (version === undefined) return `${expected}: missing`
  if (typeof version !== "number") {
    const kind =
      version === null
        ? "null"
        : Array.isArray(version)
          ? "an array"
          : typeof version === "object"
            ? "an object"
            : `a ${typeof version}`
    return `${expected}, got ${kind}`
  }
  if (!Number.isFinite(version)) return `${expected}, got a number too large to read`
  if (!Number.isInteger(version)) return `${expected}, got ${version}`
  if (version > Number.MAX_SAFE_INTEGER) return `${expected}, got ${version}, which is larger`
  if (version < 1) return `${expected}, got ${version}`
  return undefined
}

/**
 * Checks a pushed snapshot (docs/directory.md, "The snapshot") by hand rather than with a Schema
 * decoder: 10,000 users with up to 256 memberships each is millions of values, and the first problems
 * are named precisely (`users[41].groups[3]: "eng" is not a declared group`). Privilege fields are
 * looked for at every depth before anything else.
 */
export const checkSnapshot = (body: unknown): SnapshotCheck => {
  const problems: Array<{
    readonly reason: "privilege_field" | "limit_exceeded" | "invalid_snapshot"
    readonly text: string
  }> = []
  const problem = (reason: (typeof problems)[number]["reason"], text: string) => {
    problems.push({ reason, text })
  }
  const privileged = (value: unknown, path: string, depth: number): void => {
    if (depth > 8) return
    if (Array.isArray(value)) {
      for (let index = 0; index < value.length; index++) privileged(value[index], `${path}[${index}]`, depth + 1)
    } else if (isRecord(value)) {
      for (const key of Object.keys(value)) {
        const at = path === "" ? key : `${path}.${key}`
        if (PRIVILEGE_FIELDS.has(key.toLowerCase())) {
          problem(
            "privilege_field",
            `${at}: privilege fields are not accepted in a snapshot (it carries people, activity and organization groups only)`
          )
        } else privileged(value[key], at, depth + 1)
      }
    }
  }
  privileged(body, "", 0)
  if (problems.length > 0) return invalid(problems)
  if (!isRecord(body)) return invalid([{ reason: "invalid_snapshot", text: "body: expected a JSON object" }])

  const unknownKeys = (value: Record<string, unknown>, allowed: ReadonlySet<string>, path: string) => {
    for (const key of Object.keys(value))
      if (!allowed.has(key)) problem("invalid_snapshot", `${path}${key}: unknown field`)
  }
  const text = (value: unknown, path: string, optional = false): string | undefined => {
    if (value === undefined && optional) return undefined
    if (typeof value !== "string" || value.length === 0)
      problem("invalid_snapshot", `${path}: expected a nonempty string`)
    else if (value.length > MAX_TEXT) problem("invalid_snapshot", `${path}: longer than ${MAX_TEXT} characters`)
    else if (hasControlCharacter(value)) problem("invalid_snapshot", `${path}: holds a control character`)
    else return value
    return undefined
  }

  // Sizes first: past a limit the snapshot is refused whole, without a problem per item it holds.
  const rawGroups = body["groups"]
  const rawUsers = body["users"]
  if (Array.isArray(rawGroups) && rawGroups.length > MAX_SNAPSHOT_GROUPS) {
    problem("limit_exceeded", `groups: ${rawGroups.length} groups and departments; at most ${MAX_SNAPSHOT_GROUPS}`)
  }
  if (Array.isArray(rawUsers) && rawUsers.length > MAX_SNAPSHOT_USERS) {
    problem("limit_exceeded", `users: ${rawUsers.length} users; at most ${MAX_SNAPSHOT_USERS}`)
  }
  if (problems.length > 0) return invalid(problems)

  unknownKeys(body, FIELDS.top, "")
  const version = body["version"]
  const versionProblem = versionProblemOf(version)
  if (versionProblem !== undefined) problem("invalid_snapshot", `version: ${versionProblem}`)
  const groups: Array<SnapshotGroup> = []
  const declared = { group: new Set<string>(), department: new Set<string>() }
  if (!Array.isArray(rawGroups)) problem("invalid_snapshot", "groups: expected an array")
  else {
    for (const [index, raw] of rawGroups.entries()) {
      const path = `groups[${index}]`
      if (!isRecord(raw)) {
        problem("invalid_snapshot", `${path}: expected an object`)
        continue
      }
      unknownKeys(raw, FIELDS.group, `${path}.`)
      const kind = raw["kind"]
      if (kind !== "group" && kind !== "department") {
        problem("invalid_snapshot", `${path}.kind: expected "group" or "department"`)
        continue
      }
      const id = text(raw["id"], `${path}.id`)
      const name = text(raw["name"], `${path}.name`)
      if (id === undefined || name === undefined) continue
      if (declared[kind].has(id)) {
        problem("invalid_snapshot", `${path}.id: ${kind} "${id}" is declared twice`)
        continue
      }
      declared[kind].add(id)
      groups.push({ kind, id, name })
    }
  }

  const users: Array<SnapshotUser> = []
  const subjects = new Set<string>()
  const memberships = (raw: unknown, kind: "group" | "department", path: string): ReadonlyArray<string> => {
    if (raw === undefined) return []
    if (!Array.isArray(raw)) {
      problem("invalid_snapshot", `${path}: expected an array of ${kind} ids`)
      return []
    }
    const seen = new Set<string>()
    for (const [index, id] of raw.entries()) {
      if (typeof id !== "string" || id.length === 0) {
        problem("invalid_snapshot", `${path}[${index}]: expected a ${kind} id`)
      } else if (!declared[kind].has(id)) {
        problem("invalid_snapshot", `${path}[${index}]: "${id.slice(0, MAX_TEXT)}" is not a declared ${kind}`)
      } else if (seen.has(id)) {
        problem("invalid_snapshot", `${path}[${index}]: "${id}" is listed twice`)
      } else seen.add(id)
    }
    return [...seen]
  }
  if (!Array.isArray(rawUsers)) problem("invalid_snapshot", "users: expected an array")
  else {
    for (const [index, raw] of rawUsers.entries()) {
      const path = `users[${index}]`
      if (problems.length > MAX_PROBLEMS * 10) break
      if (!isRecord(raw)) {
        problem("invalid_snapshot", `${path}: expected an object`)
        continue
      }
      unknownKeys(raw, FIELDS.user, `${path}.`)
      const subject = text(raw["subject"], `${path}.subject`)
      const name = text(raw["name"], `${path}.name`, true)
      const active = raw["active"]
      if (typeof active !== "boolean") problem("invalid_snapshot", `${path}.active: expected true or false`)
      const groupIds = memberships(raw["groups"], "group", `${path}.groups`)
      const departmentIds = memberships(raw["departments"], "department", `${path}.departments`)
      const count =
        (Array.isArray(raw["groups"]) ? raw["groups"].length : 0) +
        (Array.isArray(raw["departments"]) ? raw["departments"].length : 0)
      if (count > MAX_USER_MEMBERSHIPS) {
        problem("limit_exceeded", `${path}: ${count} groups and departments; at most ${MAX_USER_MEMBERSHIPS} per user`)
      }
      if (subject === undefined || typeof active !== "boolean") continue
      if (subjects.has(subject)) {
        problem("invalid_snapshot", `${path}.subject: "${subject}" is listed twice`)
        continue
      }
      subjects.add(subject)
      users.push({ subject, name, active, groups: groupIds, departments: departmentIds })
    }
  }
  if (problems.length > 0) return invalid(problems)
  return { _tag: "Valid", snapshot: { version: version as number, groups, users } }
}

const invalid = (
  problems: ReadonlyArray<{
    readonly reason: "privilege_field" | "limit_exceeded" | "invalid_snapshot"
    readonly text: string
  }>
): SnapshotCheck => ({
  _tag: "Invalid",
  reason: problems[0]?.reason ?? "invalid_snapshot",
  problems: problems.slice(0, MAX_PROBLEMS).map((each) => each.text),
  more: Math.max(0, problems.length - MAX_PROBLEMS)
})
