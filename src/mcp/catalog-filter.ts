import { Context, Layer } from "effect"
import type { Caller } from "../auth/caller.js"
import type { BackendConfig } from "../config/schema.js"

/**
 * Which backends a caller may see (spec: Authorization model 3-4). Today: the token's scopes must
 * include every `required_scopes` entry of the backend; publication is already applied in the index.
 * A Tag so the PolicyEngine (groups, resource rules) can replace it without touching the handler.
 */
export class CatalogFilter extends Context.Tag("gateway/CatalogFilter")<
  CatalogFilter,
  {
    /** Per backend (config index): visible to this caller. Computed once per request. */
    readonly visibleBackends: (caller: Caller, backends: ReadonlyArray<BackendConfig>) => ReadonlyArray<boolean>
  }
>() {}

export const hasScopes = (caller: Caller, backend: BackendConfig): boolean =>
  backend.required_scopes.every((scope) => caller.scopes.has(scope))

export const ScopeCatalogFilter = Layer.succeed(CatalogFilter, {
  visibleBackends: (caller, backends) => backends.map((backend) => hasScopes(caller, backend))
})

/**
 * The scopes to name in a 403 `insufficient_scope` challenge, or undefined when the token may go on.
 * A token that opens no backend at all, while backends exist that scopes would open, is refused up front
 * (spec: Authentication → MCP entry 3); a token that opens some backends just sees those.
 */
export const missingScopes = (
  caller: Caller,
  backends: ReadonlyArray<BackendConfig>
): ReadonlyArray<string> | undefined => {
  if (backends.length === 0 || backends.some((backend) => hasScopes(caller, backend))) return undefined
  return [...new Set(backends.flatMap((backend) => backend.required_scopes))].sort()
}
