import { Context, Data, type Redacted } from "effect"
import type { ComposedSources } from "../sources/schema.js"
import { formatProblem } from "./problem.js"
import type { GatewayConfig } from "./schema.js"

/** One problem found in a configuration file: where (YAML path and 1-based line) and what. */
export interface ConfigProblem {
  readonly path: string
  readonly line: number | undefined
  readonly message: string
}

export class ConfigInvalid extends Data.TaggedError("ConfigInvalid")<{
  readonly file: string
  readonly problems: ReadonlyArray<ConfigProblem>
}> {
  override get message(): string {
    // Exactly what `gateway validate` prints: one `<file>:<line>: <path>: <message>` line per problem.
    return this.problems.map((problem) => formatProblem(this.file, problem)).join("\n")
  }
}

/** Values the configuration names indirectly (by environment variable name), resolved once at load. */
export interface ResolvedSecrets {
  readonly upstreamClientSecret: Redacted.Redacted<string> | undefined
  readonly directoryToken: Redacted.Redacted<string> | undefined
  /** `GATEWAY_CONFIG_KEY`, carried here because nothing but the loader sees the environment; not validated. */
  readonly configKey?: Redacted.Redacted<string>
}

/** A validated configuration generation's input: the file it came from and the typed model. */
export interface LoadedConfig {
  readonly file: string
  readonly config: GatewayConfig
  readonly secrets: ResolvedSecrets
  /**
   * The managed tool sources composed into this generation (src/sources/compose.ts); absent for a
   * configuration as loaded from the file, before composition.
   */
  readonly sources?: ComposedSources
}

/** The configuration of the current generation. Nothing else reads `process.env`. */
export class Config extends Context.Tag("gateway/Config")<Config, LoadedConfig>() {}
