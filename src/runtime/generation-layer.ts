import type { SqlClient } from "@effect/sql"
import { Layer } from "effect"
import { Config, type LoadedConfig } from "../config/service.js"
import type { ConfigKey } from "../crypto/config-key.js"
import type { Sealer } from "../crypto/sealer.js"
import type { Signer } from "../crypto/signer.js"
import type { SigningKeyRepo } from "../store/signing-keys.js"
import type { Store } from "../store/store.js"
import { type Readiness, ReadinessFromConfig } from "./readiness.js"

/**
 * Services that live for the whole process. Their configuration is static (spec Versioning 7:
 * `storage`, `auth`), so every generation shares them instead of reopening the database.
 */
export type BaseServices = Store | SqlClient.SqlClient | ConfigKey | Sealer | SigningKeyRepo | Signer

/** What one generation provides to its routes. */
export type GenerationServices = BaseServices | Config | Readiness

/** The reloadable part: rebuilt from each validated configuration. */
export const generationLayer = (loaded: LoadedConfig): Layer.Layer<Config | Readiness, never, BaseServices> =>
  ReadinessFromConfig.pipe(Layer.provideMerge(Layer.succeed(Config, loaded)))
