import { Effect, Layer } from "effect"
import type { Caller } from "../../src/bearer/caller.js"
import type { BackendConfig } from "../../src/config/schema.js"
import { AccessState } from "../../src/policy/access-state.js"
import type { EndpointAccess, Grant, GrantedEntry } from "../../src/policy/grant.js"
import { effectiveScopes, endpointAccess, View } from "../../src/policy/view.js"
import type { GroupRow } from "../../src/store/groups.js"
import type { UserId, UserRow } from "../../src/store/users.js"

/**
 * TEST DOUBLE for the stored access policy, for tests of the data plane where policy is not what they
 * test: every caller holds the scopes its token carries and may use every published tool (writes
 * included), prompt and resource of every backend. Only the AccessState is replaced; the real
 * PolicyEngine still builds views, decides calls and keys the page cache. Tests of the policy itself
 * (test/policy/) use the real AccessState over a real store.
 */
const group: GroupRow = {
  id: "permit-all",
  name: "permit all (test double)",
  provider: "gateway:permissions",
  kind: "permission",
  external_id: null,
  managed_locally: true,
  builtin: null,
  enabled: true,
  permissions: { roles: [], scopes: [], access: [] },
  source_groups: [],
  revision: 1,
  created_at: new Date(0),
  updated_at: new Date(0)
}

const entryFor = (endpointId: string, tool: string): GrantedEntry => ({
  entry: {
    endpoint_id: endpointId,
    tools: [tool],
    allow_write_requests: true,
    resource_rules: [],
    prompts: [],
    read_resources: true,
    subscribe: true
  },
  source: { group, via: { _tag: "direct" } },
  rules: []
})

const permitEndpoint = (endpointId: string): EndpointAccess => ({
  entries: (tool) => [entryFor(endpointId, tool)],
  writable: () => true,
  writesAny: true,
  prompt: () => true,
  readResources: true,
  subscribe: true,
  key: "permit-all"
})

export const permitGrant = (caller: Caller): Grant => {
  const user: UserRow = {
    id: caller.subject as UserId,
    kind: "local",
    username: caller.subject,
    display_name: caller.subject,
    status: "enabled",
    revision: 1,
    directory_active: true,
    membership_verified_at: null,
    namespace: null,
    external_subject: null,
    created_at: new Date(0),
    updated_at: new Date(0)
  }
  return {
    user,
    active: true,
    staleAt: undefined,
    roles: new Set(),
    scopes: caller.scopes,
    sources: [{ group, via: { _tag: "direct" } }],
    endpoint: permitEndpoint
  }
}

export const permitAllAccess = Layer.succeed(AccessState, {
  grantFor: (caller) => Effect.succeed(permitGrant(caller)),
  grantOfUser: () => Effect.succeed(undefined),
  groups: Effect.succeed({ byId: new Map(), mappedBy: new Map() }),
  epoch: () => 0,
  changed: () => Effect.void,
  onChange: () => () => {},
  settings: {
    roleScopes: new Map(),
    membershipMaxAgeMs: 86_400_000,
    externalNamespace: undefined,
    bootstrapSubjects: new Set<string>()
  }
})

/** The View the permissive policy gives `caller` (default: no scopes) over `backends`. */
export const permitView = (backends: ReadonlyArray<BackendConfig>, caller: Partial<Caller> = {}): View => {
  const full: Caller = {
    issuer: "test",
    subject: "user-1",
    scopes: new Set(),
    clientId: undefined,
    sessionId: undefined,
    tokenId: undefined,
    expiresAt: Number.MAX_SAFE_INTEGER,
    ...caller
  }
  const grant = permitGrant(full)
  return new View(full, grant, endpointAccess(backends, grant, effectiveScopes(full, grant)), 0, Infinity)
}
