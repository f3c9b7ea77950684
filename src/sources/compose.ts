import { Data, Effect } from "effect"
import { allRules, checkRules } from "../config/rules.js"
import type { LoadedConfig } from "../config/service.js"
import { type ManagedSource, toBackendConfig } from "./definitions.js"
import type { HttpEndpoint } from "./schema.js"
import { storedSources } from "./stored.js"

/** The managed sources do not make a runnable configuration (a rule over backends, say). */
export class ComposeFailed extends Data.TaggedError("ComposeFailed")<{ readonly message: string }> {}

/**
 * A write not yet committed, composed as if it were: the candidate generation of an applied change is
 * built from the database plus this (src/sources/applier.ts). Any write initializes managed storage, so
 * with an overlay the YAML backends count as imported. `change` absent: initialization alone.
 */
export interface SourceOverlay {
  readonly change?: { readonly id: string; readonly source: ManagedSource | undefined }
}

// Rules over `backends` run on the composed backends as they do on the YAML's.
const backendRules = allRules.filter((each) => each.needs.includes("backends"))

/** What the rules over `backends` find in `backends` (the YAML's own rules, over managed backends too). */
export const backendProblems = (loaded: LoadedConfig, backends: LoadedConfig["config"]["backends"]) =>
  checkRules({ ...loaded.config, backends }, loaded.secrets, backendRules).map(
    (each) => `${each.path}: ${each.message}`
  )

const httpEndpointOf = (source: ManagedSource): ReadonlyArray<HttpEndpoint> => {
  if (source.kind !== "http_tool" && source.kind !== "openapi_import") return []
  const { value } = source
  return [
    {
      kind: source.kind,
      id: value.id,
      allow_insecure_http: value.allow_insecure_http,
      headers: value.headers,
      credentials: value.credentials,
      required_scopes: value.required_scopes,
      tool_rules: value.tool_rules,
      naming: value.naming,
      timeouts: value.timeouts,
      max_answer_bytes: value.max_answer_bytes,
      tools: source.kind === "http_tool" ? [source.value.tool] : source.value.tools
    }
  ]
}

/**
 * The configuration a generation runs (docs/tool-sources.md, "Managed storage"): the YAML it was given
 * plus the database. Not initialized: the YAML `backends[]` and no managed sources. Initialized: the
 * database's enabled backends replace the YAML's, and its HTTP tools, OpenAPI imports and tool groups
 * are `sources`. Composing a composed configuration again gives the same result.
 */
export const composeSources = (loaded: LoadedConfig, overlay?: SourceOverlay) =>
  Effect.gen(function* () {
    const stored = yield* storedSources(loaded.config.backends)
    if (!stored.initialized && overlay === undefined) {
      // Sources a caller set already (the tests' in-process gateways, as composition would) are kept.
      return {
        ...loaded,
        sources: loaded.sources ?? { managed: false, http: [], toolGroups: [] }
      } satisfies LoadedConfig
    }
    // A configuration fresh from the file (start-up, SIGHUP) whose backends[] no longer apply: say so.
    if (stored.initialized && loaded.sources === undefined && loaded.config.backends.length > 0) {
      yield* Effect.logWarning(
        "managed storage is initialized: the database supplies backends; the configuration file's backends[] are ignored"
      ).pipe(Effect.annotateLogs({ ignored: loaded.config.backends.map((backend) => backend.id) }))
    }
    const byId = new Map(stored.sources.map((each) => [each.source.id, each.source]))
    const change = overlay?.change
    if (change !== undefined) {
      if (change.source === undefined) byId.delete(change.id)
      else byId.set(change.id, change.source)
    }
    const sources = [...byId.values()].filter((each) => each.value.enabled)
    const backends = sources.flatMap((each) => (each.kind === "backend" ? [toBackendConfig(each.value)] : []))
    const config = { ...loaded.config, backends }
    const problems = backendProblems(loaded, backends)
    if (problems.length > 0) return yield* new ComposeFailed({ message: problems.join("; ") })
    return {
      ...loaded,
      config,
      sources: {
        managed: true,
        http: sources.flatMap(httpEndpointOf),
        toolGroups: sources.flatMap((each) => {
          if (each.kind !== "tool_group") return []
          const { enabled: _enabled, ...group } = each.value
          return [group]
        })
      }
    } satisfies LoadedConfig
  })
