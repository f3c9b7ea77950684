import { Effect, Either, Option } from "effect"
import type { BackendConfig } from "../config/schema.js"
import { Sealer } from "../crypto/sealer.js"
import { ManagedSourceRepo } from "../store/managed-sources.js"
import {
  decodeSource,
  encodeSource,
  fromYamlBackend,
  type Json,
  type ManagedSource,
  openDefinition,
  recordContext
} from "./definitions.js"

/** One managed source as it stands: decoded, its encoded JSON (secrets open), its revision. */
export interface StoredSource {
  readonly source: ManagedSource
  readonly encoded: Json
  readonly revision: number
  readonly updated_at: Date | null
  readonly updated_by: string | null
}

/**
 * Every managed source as it stands. Before managed storage is initialized these are the YAML
 * `backends[]`, at revision 1 — the revision they get when the first write imports them — so a write
 * against one of them needs no special case.
 */
export const storedSources = (yamlBackends: ReadonlyArray<BackendConfig>) =>
  Effect.gen(function* () {
    const repo = yield* ManagedSourceRepo
    const sealer = yield* Sealer
    const initialized = Option.isSome(yield* repo.initialized())
    if (!initialized) {
      const sources = yamlBackends.map((backend): StoredSource => {
        const source = fromYamlBackend(backend)
        return { source, encoded: encodeSource(source), revision: 1, updated_at: null, updated_by: null }
      })
      return { initialized, sources }
    }
    const rows = yield* repo.list()
    const sources = yield* Effect.forEach(rows, (row) =>
      Effect.gen(function* () {
        const encoded = yield* openDefinition(sealer, row.kind, row.definition, recordContext(row.id))
        const decoded = decodeSource(row.kind, encoded)
        if (Either.isLeft(decoded)) {
          return yield* Effect.dieMessage(`managed source "${row.id}" no longer decodes: ${decoded.left.message}`)
        }
        return {
          source: decoded.right,
          encoded,
          revision: row.revision,
          updated_at: row.updated_at,
          updated_by: row.updated_by
        } satisfies StoredSource
      })
    )
    return { initialized, sources }
  })
