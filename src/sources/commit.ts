import { SqlClient } from "@effect/sql"
import { Data, Effect, Option } from "effect"
import type { BackendConfig } from "../config/schema.js"
import { Sealer } from "../crypto/sealer.js"
import { AuditEventRepo } from "../store/audit-events.js"
import { ManagedSourceRepo } from "../store/managed-sources.js"
import { encodeSource, fromYamlBackend, type ManagedSource, recordContext, sealDefinition } from "./definitions.js"
import type { SourceKind } from "./schema.js"

/** One write of a managed source, with the revisions it was decided against (0: the record was absent). */
export interface SourceWrite {
  readonly kind: SourceKind
  readonly id: string
  readonly action: "create" | "update" | "delete"
  /** The definition to store (create, update). */
  readonly source?: ManagedSource
  /** The target's revision and every record's it depends on (a tool group's members' endpoints). */
  readonly baseRevisions: Readonly<Record<string, number>>
}

/** A record changed since the write was decided: nothing was written. */
export class CommitRefused extends Data.TaggedError("CommitRefused")<{
  readonly reason: "target_changed" | "dependency_changed"
  readonly id: string
  /** Its revision now (0: absent). */
  readonly revision: number
}> {}

export interface CommitContext {
  /** The YAML backends imported when this write initializes managed storage. */
  readonly yamlBackends: ReadonlyArray<BackendConfig>
  readonly actorId: string | null
  readonly requestId: string | undefined
  readonly at: Date
  readonly proposalId?: string
  /** More writes of the same transaction (a proposal marked applied). */
  readonly alongside?: Effect.Effect<void, never, SqlClient.SqlClient>
}

/**
 * Commits a write in one transaction (docs/tool-sources.md): initializes managed storage if this is the
 * first write (the YAML backends imported at revision 1), checks every recorded revision, writes the
 * record conditionally on its revision and records the audit event. Anything that changed since the
 * write was decided fails it with nothing written. `write` undefined: initialization alone.
 */
export const commitWrite = (write: SourceWrite | undefined, context: CommitContext) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const repo = yield* ManagedSourceRepo
    const sealer = yield* Sealer
    const audit = yield* AuditEventRepo
    const by = context.actorId
    const store = (source: ManagedSource) =>
      sealDefinition(sealer, source.kind, encodeSource(source), recordContext(source.id))
    const event = (action: string, kind: SourceKind, id: string, detail: Record<string, unknown>) =>
      audit.insert({
        at: context.at,
        actorId: by ?? undefined,
        action,
        targetKind: kind,
        targetId: id,
        detail,
        requestId: context.requestId
      })

    const transaction = Effect.gen(function* () {
      let initialized = false
      if (Option.isNone(yield* repo.initialized())) {
        initialized = yield* repo.markInitialized(context.at, by)
        if (initialized) {
          for (const backend of context.yamlBackends) {
            const source = fromYamlBackend(backend)
            yield* repo.insert({ id: source.id, kind: "backend", definition: store(source), at: context.at, by })
          }
          yield* event("sources.initialized", "backend", "*", {
            imported: context.yamlBackends.map((backend) => backend.id)
          })
        }
      }
      if (write === undefined) return { initialized, revision: undefined }
      for (const [id, expected] of Object.entries(write.baseRevisions)) {
        const now = Option.match(yield* repo.find(id), { onNone: () => 0, onSome: (row) => row.revision })
        if (now !== expected) {
          const reason = id === write.id ? "target_changed" : "dependency_changed"
          return yield* new CommitRefused({ reason, id, revision: now })
        }
      }
      const expected = write.baseRevisions[write.id] ?? 0
      let revision: number | undefined
      if (write.action === "delete") {
        if (!(yield* repo.deleteIfRevision(write.id, expected))) revision = -1
      } else if (write.action === "create") {
        revision = (yield* repo.insert({
          id: write.id,
          kind: write.kind,
          definition: store(write.source!),
          at: context.at,
          by
        }))
          ? 1
          : -1
      } else {
        revision = (yield* repo.replaceIfRevision(write.id, expected, store(write.source!), context.at, by)) ?? -1
      }
      if (revision === -1) {
        const now = Option.match(yield* repo.find(write.id), { onNone: () => 0, onSome: (row) => row.revision })
        return yield* new CommitRefused({ reason: "target_changed", id: write.id, revision: now })
      }
      yield* event(`source.${write.action}d`, write.kind, write.id, {
        revision: revision ?? null,
        ...(context.proposalId === undefined ? {} : { proposal: context.proposalId })
      })
      if (context.alongside !== undefined) yield* context.alongside
      return { initialized, revision }
    })
    return yield* sql.withTransaction(transaction).pipe(Effect.catchTag("SqlError", (error) => Effect.die(error)))
  })
