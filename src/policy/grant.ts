import { createHash } from "node:crypto"
import type { GroupRow } from "../store/groups.js"
import type { MembershipRow } from "../store/memberships.js"
import type { UserRow } from "../store/users.js"
import { type JsonPointer, parsePointer } from "./json-pointer.js"
import type { AccessEntry, Role } from "./permissions.js"
import { type RoleScopes, roleScopeNames } from "./roles.js"
import { EVERY_TOOL } from "./tool-names.js"

/**
 * A user's effective access (docs/access-policy.md, "Rules"): the union over their active direct
 * permission groups and the permission groups their organization groups are mapped to. Built from the
 * stored rows once per change of the user or of any group, never per request.
 */

/** How a permission group reaches the user: a direct membership, or an organization group mapped onto it. */
export type Via =
  | { readonly _tag: "direct" }
  | { readonly _tag: "mapped"; readonly sourceGroupId: string; readonly sourceGroupName: string }

export interface GroupSource {
  readonly group: GroupRow
  readonly via: Via
}

export interface CompiledRule {
  readonly argument: string
  readonly pointer: JsonPointer
  readonly allowed: ReadonlySet<string>
}

/** One access entry as it applies to this user, with where it came from. */
export interface GrantedEntry {
  readonly entry: AccessEntry
  readonly source: GroupSource
  readonly rules: ReadonlyArray<CompiledRule>
}

/** What the user may do with one backend (`access[].endpoint_id`). */
export interface EndpointAccess {
  /** The entries naming original tool `tool`, by its name or by `"*"` (empty: none does). */
  entries(tool: string): ReadonlyArray<GrantedEntry>
  /** An entry naming `tool` has `allow_write_requests`. */
  writable(tool: string): boolean
  /** Some entry allows write requests to some tool of this backend. */
  readonly writesAny: boolean
  /** An entry names original prompt `name`. */
  prompt(name: string): boolean
  readonly readResources: boolean
  readonly subscribe: boolean
  /** A digest of everything above: equal keys mean equal access to this backend. */
  readonly key: string
}

/**
 * The EndpointAccess of the access entries that name one backend. `tools` holds, per named tool, the
 * entries naming it and (after them) the `"*"` entries; `every` holds the `"*"` entries alone, which
 * name any other tool the backend publishes, now or later.
 */
class EntriesAccess implements EndpointAccess {
  constructor(
    private readonly tools: ReadonlyMap<string, ReadonlyArray<GrantedEntry>>,
    private readonly every: ReadonlyArray<GrantedEntry>,
    private readonly writes: ReadonlySet<string>,
    /** A `"*"` entry allows write requests: to every tool. */
    private readonly writesEvery: boolean,
    private readonly prompts: ReadonlySet<string>,
    readonly readResources: boolean,
    readonly subscribe: boolean,
    readonly key: string
  ) {}
  entries(tool: string) {
    return this.tools.get(tool) ?? this.every
  }
  writable(tool: string) {
    return this.writesEvery || this.writes.has(tool)
  }
  get writesAny() {
    return this.writesEvery || this.writes.size > 0
  }
  prompt(name: string) {
    return this.prompts.has(name)
  }
}

export interface Grant {
  readonly user: UserRow
  /** Enabled locally and active in the directory. */
  readonly active: boolean
  /** Enterprise users: when their upstream memberships stop counting (ms since epoch); else undefined. */
  readonly staleAt: number | undefined
  readonly roles: ReadonlySet<Role>
  /** The scopes the user holds now: permission scopes and the scopes of their roles. */
  readonly scopes: ReadonlySet<string>
  /** Every active permission group that applies, and how. */
  readonly sources: ReadonlyArray<GroupSource>
  /** What the user may do with backend `id`; undefined when no access entry names it. */
  endpoint(id: string): EndpointAccess | undefined
}

export interface GroupIndex {
  readonly byId: ReadonlyMap<string, GroupRow>
  /** Organization group id → the enabled permission groups it is mapped to. */
  readonly mappedBy: ReadonlyMap<string, ReadonlyArray<GroupRow>>
}

export const indexGroups = (groups: ReadonlyArray<GroupRow>): GroupIndex => {
  const byId = new Map(groups.map((group) => [group.id, group]))
  const mappedBy = new Map<string, Array<GroupRow>>()
  for (const group of groups) {
    if (group.kind !== "permission") continue
    for (const source of group.source_groups) {
      const list = mappedBy.get(source)
      if (list === undefined) mappedBy.set(source, [group])
      else list.push(group)
    }
  }
  return { byId, mappedBy }
}

export interface GrantSettings {
  readonly roleScopes: RoleScopes
  /** `auth.enterprise_membership_max_age`, in ms. */
  readonly membershipMaxAgeMs: number
}

export const compileRules = (entry: AccessEntry): ReadonlyArray<CompiledRule> =>
  entry.resource_rules.map((rule) => ({
    argument: rule.argument,
    // Validated when written; an unparseable pointer can only come from a hand-edited row: it never matches.
    pointer: parsePointer(rule.argument) ?? ["\u0000unparseable"],
    allowed: new Set(rule.allowed_values)
  }))

// JSON, not a join: names may contain any separator, and two different grants must never share a key
// (the key selects cached tools/list pages, so a collision would show one caller another's tools).
const digest = (value: unknown) => createHash("sha256").update(JSON.stringify(value)).digest("base64url")

/**
 * The sources of `user`'s access: direct memberships of enabled permission groups, and enabled
 * organization groups mapped onto enabled permission groups. Upstream memberships count only once
 * an upstream has verified them (`membership_verified_at`).
 */
export const sourcesOf = (
  user: UserRow,
  memberships: ReadonlyArray<MembershipRow>,
  groups: GroupIndex
): ReadonlyArray<GroupSource> => {
  const sources: Array<GroupSource> = []
  const seen = new Set<string>()
  const add = (group: GroupRow, via: Via) => {
    if (seen.has(group.id) || !group.enabled || group.kind !== "permission") return
    seen.add(group.id)
    sources.push({ group, via })
  }
  for (const membership of memberships) {
    const group = groups.byId.get(membership.group_id)
    if (group === undefined || !group.enabled) continue
    if (membership.source === "direct") {
      add(group, { _tag: "direct" })
      continue
    }
    if (user.membership_verified_at === null) continue
    for (const mapped of groups.mappedBy.get(group.id) ?? []) {
      add(mapped, { _tag: "mapped", sourceGroupId: group.id, sourceGroupName: group.name })
    }
  }
  return sources
}

interface EndpointBuilder {
  readonly tools: Map<string, Array<GrantedEntry>>
  /** Entries whose `tools` is `["*"]`. */
  readonly every: Array<GrantedEntry>
  writesEvery: boolean
  readonly writable: Set<string>
  readonly prompts: Set<string>
  readResources: boolean
  subscribe: boolean
}

const sorted = (values: Iterable<string>) => [...values].sort()

export const buildGrant = (
  user: UserRow,
  memberships: ReadonlyArray<MembershipRow>,
  groups: GroupIndex,
  settings: GrantSettings
): Grant => {
  const sources = sourcesOf(user, memberships, groups)
  const roles = new Set<Role>()
  const scopes = new Set<string>()
  const reserved = new Set(roleScopeNames(settings.roleScopes))
  const builders = new Map<string, EndpointBuilder>()
  for (const source of sources) {
    const permissions = source.group.permissions
    if (permissions === null) continue
    for (const role of permissions.roles) {
      roles.add(role)
      for (const scope of settings.roleScopes.get(role) ?? []) scopes.add(scope)
    }
    // Administrative scopes only through roles (a hand-edited row cannot grant them either).
    for (const scope of permissions.scopes) if (!reserved.has(scope)) scopes.add(scope)
    for (const entry of permissions.access) {
      let builder = builders.get(entry.endpoint_id)
      if (builder === undefined) {
        builder = {
          tools: new Map(),
          every: [],
          writesEvery: false,
          writable: new Set(),
          prompts: new Set(),
          readResources: false,
          subscribe: false
        }
        builders.set(entry.endpoint_id, builder)
      }
      const granted: GrantedEntry = { entry, source, rules: compileRules(entry) }
      // `"*"` names every tool: such an entry is kept once, whatever else its list names (a write refuses
      // a list mixing both, src/policy/tool-names.ts; a hand-edited row is read as `"*"`).
      const every = entry.tools.includes(EVERY_TOOL)
      if (every) {
        builder.every.push(granted)
        builder.writesEvery ||= entry.allow_write_requests
      }
      for (const tool of every ? [] : entry.tools) {
        const list = builder.tools.get(tool)
        if (list === undefined) builder.tools.set(tool, [granted])
        else list.push(granted)
        if (entry.allow_write_requests) builder.writable.add(tool)
      }
      for (const prompt of entry.prompts) builder.prompts.add(prompt)
      builder.readResources ||= entry.read_resources
      builder.subscribe ||= entry.subscribe
    }
  }
  const endpoints = new Map<string, EndpointAccess>()
  for (const [id, builder] of builders) {
    const { tools, every, writesEvery, writable, prompts, readResources, subscribe } = builder
    const key = digest([
      sorted(tools.keys()),
      sorted(writable),
      every.length > 0,
      writesEvery,
      sorted(prompts),
      readResources,
      subscribe
    ])
    // A named tool is also named by every `"*"` entry: merged once here, not per lookup.
    if (every.length > 0) for (const list of tools.values()) for (const entry of every) list.push(entry)
    endpoints.set(id, new EntriesAccess(tools, every, writable, writesEvery, prompts, readResources, subscribe, key))
  }
  const verifiedAt = user.membership_verified_at?.getTime()
  return {
    user,
    active: user.status === "enabled" && user.directory_active,
    staleAt:
      user.kind === "enterprise" && verifiedAt !== undefined ? verifiedAt + settings.membershipMaxAgeMs : undefined,
    roles,
    scopes,
    sources,
    endpoint: (id) => endpoints.get(id)
  }
}
