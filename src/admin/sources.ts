import { randomUUID } from "node:crypto"
import { HttpApiBuilder, type HttpServerRequest } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { Clock, Effect, Either, Layer, Option, ParseResult, Schema } from "effect"
import { issueProblems } from "../config/issues.js"
import { Config } from "../config/service.js"
import { Sealer } from "../crypto/sealer.js"
import { securityEvent } from "../events/security-log.js"
import { isRecord } from "../json.js"
import { SourceApplier } from "../sources/applier.js"
import { ConfigChanges } from "../sources/changes.js"
import { dependencies, groupsUsing, writeProblems } from "../sources/checks.js"
import { CommitRefused, commitWrite, type SourceWrite } from "../sources/commit.js"
import {
  encodeSource,
  type Json,
  keepSecrets,
  kindNames,
  type ManagedSource,
  maskDefinition,
  proposalContext,
  schemaOf,
  sealDefinition
} from "../sources/definitions.js"
import { importOpenApi } from "../sources/openapi/import.js"
import { reviewUrl } from "../sources/review-url.js"
import type { SourceKind } from "../sources/schema.js"
import { type StoredSource, storedSources } from "../sources/stored.js"
import { AuditEventRepo } from "../store/audit-events.js"
import { ManagedSourceRepo } from "../store/managed-sources.js"
import { ProposalRepo } from "../store/source-proposals.js"
import { UserRepo } from "../store/users.js"
import { AdminCaller, ManagementApi } from "./api.js"
import { ifMatchRevision, MAX_BODY_BYTES, readJsonObject } from "./body.js"
import { apiError, requestId } from "./errors.js"
import { OpenApiImportBody, type SourceRecord } from "./sources-api.js"

/** An OpenAPI document may be sent in the body: that route alone reads up to 32 MiB. */
export const MAX_IMPORT_BODY_BYTES = 32 * 1024 * 1024

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
  return apiError(
    400,
    "invalid_request",
    listProblems(problems.map((problem) => `${problem.path || "body"}: ${problem.message}`))
  )
}

export const recordOf = (stored: StoredSource): SourceRecord => ({
  kind: stored.source.kind,
  id: stored.source.id,
  revision: String(stored.revision),
  definition: maskDefinition(stored.source.kind, stored.encoded),
  updated_at: stored.updated_at?.toISOString() ?? null,
  updated_by: stored.updated_by
})

/** Canonical JSON (sorted keys) to compare two definitions. */
const canonical = (value: unknown): string =>
  JSON.stringify(value, (_, item) =>
    isRecord(item) ? Object.fromEntries(Object.entries(item).sort(([a], [b]) => (a < b ? -1 : 1))) : item
  )

/**
 * The handlers of one kind of managed tool source (docs/management-api.md, "Tool sources"). A write is
 * decoded strictly, checked (its own rules, the ids of every kind, tool groups' members), and then
 * either applied — a new generation through the one reload path, committed with its revision checks
 * only once the generation is built — or, with configuration review on, stored as a proposal (202).
 */
const sourceHandlers = (kind: SourceKind) =>
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
        if (found === undefined) return yield* apiError(404, "not_found", `No ${names.one} "${id}".`)
        return { stored, found }
      })

    const list = Effect.map(current, (stored) => ({
      managed: stored.initialized,
      items: stored.sources.filter((each) => each.source.kind === kind).map(recordOf)
    }))

    const read = (id: string) => Effect.map(findOwn(id), ({ found }) => recordOf(found))

    /** The body of a write: JSON, at most 1 MiB (32 MiB for an OpenAPI import, which may carry the document). */
    const readBody = (request: HttpServerRequest.HttpServerRequest) =>
      readJsonObject(request, kind === "openapi_import" ? MAX_IMPORT_BODY_BYTES : MAX_BODY_BYTES)

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
          return yield* apiError(400, "invalid_request", `source: ${pointer}: ${imported.left.message}`)
        }
        const value = {
          ...given,
          tools: imported.right.tools,
          document_sha256: imported.right.document_sha256,
          tool_rules: "tool_rules" in body ? given.tool_rules : imported.right.tool_rules
        }
        return { kind, id: given.id, value } as ManagedSource
      })

    const person = Effect.gen(function* () {
      const admin = yield* AdminCaller
      const user = yield* users.findById(admin.userId)
      return {
        user_id: admin.userId,
        name: Option.match(user, { onNone: () => admin.userId, onSome: (u) => u.display_name })
      }
    })

    /** Checks a write against every source as it would leave them; a 400 naming each problem. */
    const check = (source: ManagedSource, stored: ReadonlyArray<StoredSource>) =>
      Effect.gen(function* () {
        const { config, ...rest } = yield* Config
        const after = [...stored.filter((each) => each.source.id !== source.id).map((each) => each.source), source]
        const problems = writeProblems({ config, ...rest }, source, after)
        if (problems.length > 0) return yield* apiError(400, "invalid_request", listProblems(problems))
      })

    /** Applies a write now: a new generation, then its commit; the record written (none: a delete). */
    const applyNow = (write: SourceWrite) =>
      Effect.gen(function* () {
        const admin = yield* AdminCaller
        const at = new Date(yield* Clock.currentTimeMillis)
        const commit = commitWrite(write, {
          yamlBackends: yield* yamlBackends,
          actorId: admin.userId,
          requestId: yield* requestId,
          at
        }).pipe(Effect.provide(services))
        const applied = yield* Effect.either(applier.apply({ change: { id: write.id, source: write.source } }, commit))
        if (Either.isLeft(applied)) {
          const failure = applied.left
          if (failure instanceof CommitRefused) {
            return yield* failure.reason === "target_changed"
              ? apiError(
                  412,
                  "precondition_failed",
                  `"${write.id}" changed meanwhile: its revision is now "${failure.revision}". Read it again.`
                )
              : apiError(
                  409,
                  "dependency_changed",
                  `"${failure.id}", which this change depends on, changed meanwhile. Try again.`
                )
          }
          return yield* apiError(
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
          actor: admin.userId,
          proposal: null
        })
        if (write.action === "delete") return undefined
        const { found } = yield* findOwn(write.id)
        return recordOf(found)
      })

    /** Stores a proposal (configuration review on): nothing is activated; 202 with where to review it. */
    const propose = (write: SourceWrite) =>
      Effect.gen(function* () {
        const id = randomUUID()
        const proposer = yield* person
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

    const create = (request: HttpServerRequest.HttpServerRequest) =>
      Effect.gen(function* () {
        const body = yield* readBody(request)
        const kept = keepSecrets(kind, body, undefined)
        if (Either.isLeft(kept)) {
          return yield* apiError(
            400,
            "invalid_request",
            `${kept.left}: there is no stored secret to keep; send its value`
          )
        }
        const source = yield* decodeDefinition(kept.right)
        const stored = yield* current
        const taken = stored.sources.find((each) => each.source.id === source.id)
        if (taken !== undefined) {
          return yield* apiError(
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
        if (yield* reviewOn) return yield* propose(write)
        return (yield* applyNow(write))!
      })

    const update = (request: HttpServerRequest.HttpServerRequest, id: string) =>
      Effect.gen(function* () {
        const revision = yield* ifMatchRevision(request)
        const body = yield* readBody(request)
        const { stored, found } = yield* findOwn(id)
        if (found.revision !== revision) {
          return yield* apiError(
            412,
            "precondition_failed",
            `The ${names.one} "${id}" changed since it was read: its revision is now "${found.revision}". Read it again.`
          )
        }
        if ("id" in body && body["id"] !== id) {
          return yield* apiError(
            400,
            "invalid_request",
            `id: the body names "${String(body["id"])}", the path "${id}"; an id cannot change.`
          )
        }
        const kept = keepSecrets(kind, { ...body, id }, found.encoded)
        if (Either.isLeft(kept)) {
          return yield* apiError(
            400,
            "invalid_request",
            `${kept.left}: there is no stored secret to keep; send its value`
          )
        }
        const source = yield* decodeDefinition(kept.right)
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
        if ((yield* reviewOn) && !pureDisable) return yield* propose(write)
        return (yield* applyNow(write))!
      })

    const remove = (request: HttpServerRequest.HttpServerRequest, id: string) =>
      Effect.gen(function* () {
        const revision = yield* ifMatchRevision(request)
        const { stored, found } = yield* findOwn(id)
        if (found.revision !== revision) {
          return yield* apiError(
            412,
            "precondition_failed",
            `The ${names.one} "${id}" changed since it was read: its revision is now "${found.revision}". Read it again.`
          )
        }
        const users = groupsUsing(
          id,
          stored.sources.map((each) => each.source)
        )
        if (users.length > 0) {
          return yield* apiError(
            409,
            "in_use",
            `The ${names.one} "${id}" is a member of the tool group(s) ${users.map((each) => `"${each}"`).join(", ")}; remove it there first.`
          )
        }
        yield* applyNow({ kind, id, action: "delete", baseRevisions: { [id]: found.revision } })
      })

    return { list, read, create, update, remove }
  })

export const BackendsLive = HttpApiBuilder.group(ManagementApi, "backends", (handlers) =>
  Effect.map(sourceHandlers("backend"), (h) =>
    handlers
      .handle("list", () => h.list)
      .handle("read", ({ path }) => h.read(path.id))
      .handleRaw("create", ({ request }) => h.create(request))
      .handleRaw("update", ({ request, path }) => h.update(request, path.id))
      .handleRaw("delete", ({ request, path }) => h.remove(request, path.id))
  )
)

export const HttpToolsLive = HttpApiBuilder.group(ManagementApi, "httpTools", (handlers) =>
  Effect.map(sourceHandlers("http_tool"), (h) =>
    handlers
      .handle("list", () => h.list)
      .handle("read", ({ path }) => h.read(path.id))
      .handleRaw("create", ({ request }) => h.create(request))
      .handleRaw("update", ({ request, path }) => h.update(request, path.id))
      .handleRaw("delete", ({ request, path }) => h.remove(request, path.id))
  )
)

export const OpenApiImportsLive = HttpApiBuilder.group(ManagementApi, "openApiImports", (handlers) =>
  Effect.map(sourceHandlers("openapi_import"), (h) =>
    handlers
      .handle("list", () => h.list)
      .handle("read", ({ path }) => h.read(path.id))
      .handleRaw("create", ({ request }) => h.create(request))
      .handleRaw("update", ({ request, path }) => h.update(request, path.id))
      .handleRaw("delete", ({ request, path }) => h.remove(request, path.id))
  )
)

export const ToolGroupsLive = HttpApiBuilder.group(ManagementApi, "toolGroups", (handlers) =>
  Effect.map(sourceHandlers("tool_group"), (h) =>
    handlers
      .handle("list", () => h.list)
      .handle("read", ({ path }) => h.read(path.id))
      .handleRaw("create", ({ request }) => h.create(request))
      .handleRaw("update", ({ request, path }) => h.update(request, path.id))
      .handleRaw("delete", ({ request, path }) => h.remove(request, path.id))
  )
)

/** `POST /tool-sources/initialize` and the proposals' reads (docs/management-api.md, "Tool sources"). */
export const ToolSourcesLive = HttpApiBuilder.group(ManagementApi, "toolSources", (handlers) =>
  Effect.gen(function* () {
    const applier = yield* SourceApplier
    const changes = yield* ConfigChanges
    const repo = yield* ManagedSourceRepo
    const services = Layer.mergeAll(
      Layer.succeed(ManagedSourceRepo, repo),
      Layer.succeed(Sealer, yield* Sealer),
      Layer.succeed(AuditEventRepo, yield* AuditEventRepo),
      Layer.succeed(SqlClient.SqlClient, yield* SqlClient.SqlClient)
    )
    const initialize = Effect.gen(function* () {
      const before = yield* repo.initialized()
      if (Option.isSome(before)) {
        return { managed: true as const, initialized_at: before.value.at.toISOString(), imported: [] }
      }
      const admin = yield* AdminCaller
      const loaded = applier.serving() ?? (yield* Config)
      const at = new Date(yield* Clock.currentTimeMillis)
      const commit = commitWrite(undefined, {
        yamlBackends: loaded.config.backends,
        actorId: admin.userId,
        requestId: yield* requestId,
        at
      }).pipe(Effect.provide(services))
      const done = yield* Effect.either(applier.apply({}, commit))
      if (Either.isLeft(done)) {
        const message = done.left instanceof CommitRefused ? "a concurrent write" : done.left.message
        return yield* apiError(409, "not_applied", `Managed storage was not initialized: ${message}.`)
      }
      const marker = Option.getOrThrow(yield* repo.initialized())
      if (done.right.initialized) {
        yield* securityEvent("config.initialized", {
          actor: admin.userId,
          imported: loaded.config.backends.map((backend) => backend.id)
        })
      }
      return {
        managed: true as const,
        initialized_at: marker.at.toISOString(),
        imported: done.right.initialized ? loaded.config.backends.map((backend) => backend.id) : []
      }
    })
    return handlers
      .handle("initialize", () => initialize)
      .handle("proposals", ({ urlParams }) =>
        Effect.map(changes.list(urlParams.state === undefined ? {} : { state: urlParams.state }), (items) => ({
          items
        }))
      )
      .handle("proposal", ({ path }) =>
        Effect.flatMap(changes.show(path.id), (found) =>
          Option.isNone(found) ? apiError(404, "not_found", `No proposal "${path.id}".`) : Effect.succeed(found.value)
        )
      )
  })
)
