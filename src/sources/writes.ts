import { randomUUID } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { Clock, Data, Effect, Either, Layer, Option, ParseResult, Schema } from "effect"
import { issueProblems } from "../config/issues.js"
import { Config } from "../config/service.js"
import { Sealer } from "../crypto/sealer.js"
import { securityEvent } from "../events/security-log.js"
import type { ErrorCode } from "../http/error-codes.js"
import { isRecord } from "../json.js"
import { AuditEventRepo } from "../store/audit-events.js"
import { ManagedSourceRepo } from "../store/managed-sources.js"
import { ProposalRepo } from "../store/source-proposals.js"
import { UserRepo } from "../store/users.js"
import { SourceApplier } from "./applier.js"
import { dependencies, groupsUsing, writeProblems } from "./checks.js"
import { CommitRefused, commitWrite, type SourceWrite } from "./commit.js"
import {
  encodeSource,
  type Json,
  keepSecrets,
  keptPointers,
  kindNames,
  ManagedOpenApiImport,
  type ManagedSource,
  maskDefinition,
  movedSecrets,
  proposalContext,
  schemaOf,
  sealDefinition
} from "./definitions.js"
import { importOpenApi } from "./openapi/import.js"
import { reviewUrl } from "./review-url.js"
import type { SourceKind } from "./schema.js"
import { type StoredSource, storedSources } from "./stored.js"

/**
 * The writes and reads of one kind of managed tool source, as the Management API
 * (src/admin/sources.ts) and the console's pages both call them (docs/tool-sources.md). A write is
 * decoded strictly, checked (its own rules, the ids of every kind, tool groups' members), and then
 * either applied — a new generation through the one reload path, committed with its revision checks
 * only once the generation is built — or, with configuration review on, stored as a proposal.
 */

/** An OpenAPI import as written: the tools are derived from the document, never sent. */
export const OpenApiImportBody = ManagedOpenApiImport.pipe(Schema.omit("tools", "document_sha256"))

/** A refused read or write: the status and stable code the API answers with, and a message naming the field. */
export class SourceWriteRefused extends Data.TaggedError("SourceWriteRefused")<{
  readonly status: 400 | 404 | 409 | 412
  readonly code: ErrorCode
  readonly message: string
}> {}

const refuse = (status: SourceWriteRefused["status"], code: ErrorCode, message: string) =>
  Effect.fail(new SourceWriteRefused({ status, code, message }))

/** Who writes: the administrator's user id, and the request's id for the audit event. */
export interface SourceActor {
  readonly userId: string
  readonly requestId: string | undefined
}

/** A record as read: its definition with every secret as `{"configured": true}`. */
export interface SourceRecordOf {
  readonly kind: SourceKind
  readonly id: string
  readonly revision: string
  readonly definition: Record<string, unknown>
  readonly updated_at: string | null
  readonly updated_by: string | null
}

export interface PendingProposal {
  readonly pending_approval: true
  readonly approval_id: string
  readonly approval_url: string
}

export const recordOf = (stored: StoredSource): SourceRecordOf => ({
  kind: stored.source.kind,
  id: stored.source.id,
  revision: String(stored.revision),
  definition: maskDefinition(stored.source.kind, stored.encoded),
  updated_at: stored.updated_at?.toISOString() ?? null,
  updated_by: stored.updated_by
})

const strict = { onExcessProperty: "error", errors: "all" } as const
const MAX_PROBLEMS = 5

const listProblems = (problems: ReadonlyArray<string>) =>
  problems.slice(0, MAX_PROBLEMS).join("; ") +
  (problems.length > MAX_PROBLEMS ? ` (and ${problems.length - MAX_PROBLEMS} more)` : "")

/** Decodes strictly; a 400 naming each field at fault, never echoing a secret's value. */
const decodeStrict = <A, I>(schema: Schema.Schema<A, I>, value: unknown) => {
  const decoded = Schema.decodeUnknownEither(schema, strict)(value)
  if (Either.isRight(decoded)) return Effect.succeed(decoded.right)
  const problems = issueProblems(ParseResult.isParseError(decoded.left) ? decoded.left.issue : decoded.left, new Map())
  return refuse(
    400,
    "invalid_request",
    listProblems(problems.map((problem) => `${problem.path || "body"}: ${problem.message}`))
  )
}

/** Canonical JSON (sorted keys) to compare two definitions. */
const canonical = (value: unknown): string =>
  JSON.stringify(value, (_, item) =>
    isRecord(item) ? Object.fromEntries(Object.entries(item).sort(([a], [b]) => (a < b ? -1 : 1))) : item
  )

export const sourceWrites = (kind: SourceKind) =>
  Effect.gen(function* () {
    const applier = yield* SourceApplier
    const proposals = yield* ProposalRepo
    const users = yield* UserRepo
    const sealer = yield* Sealer
    const services = Layer.mergeAll(
      Layer.succeed(ManagedSourceRepo, yield* ManagedSourceRepo),
      Layer.succeed(Sealer, sealer),
      Layer.succeed(AuditEventRepo, yield* AuditEventRepo),
      Layer.succeed(SqlClient.SqlClient, yield* SqlClient.SqlClient)
    )
    const names = kindNames[kind]

    const yamlBackends = Effect.map(Config, (loaded) => applier.serving()?.config.backends ?? loaded.config.backends)
    const current = Effect.flatMap(yamlBackends, (backends) => storedSources(backends).pipe(Effect.provide(services)))

    const findOwn = (id: string) =>
      Effect.gen(function* () {
        const stored = yield* current
        const found = stored.sources.find((each) => each.source.id === id && each.source.kind === kind)
        if (found === undefined) return yield* refuse(404, "not_found", `No ${names.one} "${id}".`)
        return { stored, found }
      })

    const list = Effect.map(current, (stored) => ({
      managed: stored.initialized,
      items: stored.sources.filter((each) => each.source.kind === kind).map(recordOf)
    }))

    const read = (id: string) => Effect.map(findOwn(id), ({ found }) => recordOf(found))

    /** The definition a write body asks for, decoded and (an OpenAPI import) imported. */
    const decodeDefinition = (body: Json) =>
      Effect.gen(function* () {
        if (kind !== "openapi_import") {
          const value = yield* decodeStrict(schemaOf[kind], body)
          return { kind, id: String(value.id), value } as ManagedSource
        }
        const given = yield* decodeStrict(OpenApiImportBody, body)
        const imported = yield* Effect.either(
          importOpenApi({
            source: given.source,
            ...(given.server_url === undefined ? {} : { server_url: given.server_url })
          })
        )
        if (Either.isLeft(imported)) {
          const pointer = imported.left.pointer === "" ? "document" : imported.left.pointer
          return yield* refuse(400, "invalid_request", `source: ${pointer}: ${imported.left.message}`)
        }
        const value = {
          ...given,
          tools: imported.right.tools,
          document_sha256: imported.right.document_sha256,
          tool_rules: "tool_rules" in body ? given.tool_rules : imported.right.tool_rules
        }
        return { kind, id: given.id, value } as ManagedSource
      })

    const person = (actor: SourceActor) =>
      Effect.map(users.findById(actor.userId), (user) => ({
        user_id: actor.userId,
        name: Option.match(user, { onNone: () => actor.userId, onSome: (u) => u.display_name })
      }))

    /** Checks a write against every source as it would leave them; a 400 naming each problem. */
    const check = (source: ManagedSource, stored: ReadonlyArray<StoredSource>) =>
      Effect.gen(function* () {
        const { config, ...rest } = yield* Config
        const after = [...stored.filter((each) => each.source.id !== source.id).map((each) => each.source), source]
        const problems = writeProblems({ config, ...rest }, source, after)
        if (problems.length > 0) return yield* refuse(400, "invalid_request", listProblems(problems))
      })

    /** Applies a write now: a new generation, then its commit; the record written (none: a delete). */
    const applyNow = (write: SourceWrite, actor: SourceActor) =>
      Effect.gen(function* () {
        const at = new Date(yield* Clock.currentTimeMillis)
        const commit = commitWrite(write, {
          yamlBackends: yield* yamlBackends,
          actorId: actor.userId,
          requestId: actor.requestId,
          at
        }).pipe(Effect.provide(services))
        const applied = yield* Effect.either(applier.apply({ change: { id: write.id, source: write.source } }, commit))
        if (Either.isLeft(applied)) {
          const failure = applied.left
          if (failure instanceof CommitRefused) {
            return yield* failure.reason === "target_changed"
              ? refuse(
                  412,
                  "precondition_failed",
                  `"${write.id}" changed meanwhile: its revision is now "${failure.revision}". Read it again.`
                )
              : refuse(
                  409,
                  "dependency_changed",
                  `"${failure.id}", which this change depends on, changed meanwhile. Try again.`
                )
          }
          return yield* refuse(
            409,
            "not_applied",
            `The change was not applied: ${failure.message}. Nothing was written; the previous configuration keeps serving.`
          )
        }
        yield* securityEvent("config.applied", {
          kind,
          target: write.id,
          action: write.action,
          revision: applied.right.revision ?? null,
          actor: actor.userId,
          proposal: null
        })
        if (write.action === "delete") return undefined
        const { found } = yield* findOwn(write.id)
        return recordOf(found)
      })

    /** Stores a proposal (configuration review on): nothing is activated; where to review it. */
    const propose = (write: SourceWrite, actor: SourceActor) =>
      Effect.gen(function* () {
        const id = randomUUID()
        const proposer = yield* person(actor)
        const at = new Date(yield* Clock.currentTimeMillis)
        yield* proposals.insert({
          id,
          kind,
          targetId: write.id,
          action: write.action === "create" ? "create" : "update",
          definition: sealDefinition(sealer, kind, encodeSource(write.source!), proposalContext(id)),
          baseRevisions: write.baseRevisions,
          proposedBy: proposer,
          at
        })
        yield* securityEvent("config.proposed", {
          proposal: id,
          kind,
          target: write.id,
          action: write.action,
          proposer: proposer.user_id
        })
        const { config } = yield* Config
        return { pending_approval: true as const, approval_id: id, approval_url: reviewUrl(config, id) }
      })

    const reviewOn = Effect.map(Config, ({ config }) => config.admin.approvals.policy_changes.enabled)

    const noSecretToKeep = (pointer: string) =>
      refuse(400, "invalid_request", `${pointer}: there is no stored secret to keep; send its value`)

    /** Creates from a JSON body: the record applied, or the proposal stored (review on). */
    const create = (body: Json, actor: SourceActor) =>
      Effect.gen(function* () {
        const kept = keepSecrets(kind, body, undefined)
        if (Either.isLeft(kept)) return yield* noSecretToKeep(kept.left)
        const source = yield* decodeDefinition(kept.right)
        const stored = yield* current
        const taken = stored.sources.find((each) => each.source.id === source.id)
        if (taken !== undefined) {
          return yield* refuse(
            409,
            "id_taken",
            `id: "${source.id}" is already the id of a ${kindNames[taken.source.kind].one}; ids are unique across backends, HTTP tools, OpenAPI imports and tool groups.`
          )
        }
        yield* check(source, stored.sources)
        const revisions = new Map(stored.sources.map((each) => [each.source.id, each.revision]))
        const write: SourceWrite = {
          kind,
          id: source.id,
          action: "create",
          source,
          baseRevisions: { ...dependencies(source, revisions), [source.id]: 0 }
        }
        if (yield* reviewOn) return yield* propose(write, actor)
        return (yield* applyNow(write, actor))!
      })

    const stale = (id: string, found: StoredSource) =>
      refuse(
        412,
        "precondition_failed",
        `The ${names.one} "${id}" changed since it was read: its revision is now "${found.revision}". Read it again.`
      )

    /** Replaces `id` if it is still at `revision` (If-Match): the record applied, or the proposal stored. */
    const update = (id: string, revision: number, body: Json, actor: SourceActor) =>
      Effect.gen(function* () {
        const { stored, found } = yield* findOwn(id)
        if (found.revision !== revision) return yield* stale(id, found)
        if ("id" in body && body["id"] !== id) {
          return yield* refuse(
            400,
            "invalid_request",
            `id: the body names "${String(body["id"])}", the path "${id}"; an id cannot change.`
          )
        }
        const kept = keepSecrets(kind, { ...body, id }, found.encoded)
        if (Either.isLeft(kept)) return yield* noSecretToKeep(kept.left)
        const source = yield* decodeDefinition(kept.right)
        const moved = movedSecrets(found.source, source, keptPointers(kind, body))
        if (moved.length > 0) {
          return yield* refuse(
            400,
            "invalid_request",
            listProblems(
              moved.map(
                ({ pointer, field }) =>
                  `${pointer}: ${field} changed where this secret is sent, so the stored secret is not kept; send its value again`
              )
            )
          )
        }
        yield* check(source, stored.sources)
        const revisions = new Map(stored.sources.map((each) => [each.source.id, each.revision]))
        const write: SourceWrite = {
          kind,
          id,
          action: "update",
          source,
          baseRevisions: { ...dependencies(source, revisions), [id]: found.revision }
        }
        // A pure enabled → disabled change takes tools away only: it applies at once, reviewed or not.
        const pureDisable =
          found.source.value.enabled &&
          !source.value.enabled &&
          canonical(encodeSource(source)) === canonical({ ...found.encoded, enabled: false })
        if ((yield* reviewOn) && !pureDisable) return yield* propose(write, actor)
        return (yield* applyNow(write, actor))!
      })

    /** Deletes `id` if it is still at `revision`, at once (reviewed or not); refused while a tool group uses it. */
    const remove = (id: string, revision: number, actor: SourceActor) =>
      Effect.gen(function* () {
        const { stored, found } = yield* findOwn(id)
        if (found.revision !== revision) return yield* stale(id, found)
        const usedBy = groupsUsing(
          id,
          stored.sources.map((each) => each.source)
        )
        if (usedBy.length > 0) {
          return yield* refuse(
            409,
            "in_use",
            `The ${names.one} "${id}" is a member of the tool group(s) ${usedBy.map((each) => `"${each}"`).join(", ")}; remove it there first.`
          )
        }
        yield* applyNow({ kind, id, action: "delete", baseRevisions: { [id]: found.revision } }, actor)
      })

    return { list, read, create, update, remove }
  })
