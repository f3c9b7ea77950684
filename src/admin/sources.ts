import { HttpApiBuilder, type HttpServerRequest } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { Clock, Effect, Either, Layer, Option } from "effect"
import { Config } from "../config/service.js"
import { Sealer } from "../crypto/sealer.js"
import { securityEvent } from "../events/security-log.js"
import { SourceApplier } from "../sources/applier.js"
import { ConfigChanges } from "../sources/changes.js"
import { CommitRefused, commitWrite } from "../sources/commit.js"
import type { SourceKind } from "../sources/schema.js"
import { type SourceWriteRefused, sourceWrites } from "../sources/writes.js"
import { AuditEventRepo } from "../store/audit-events.js"
import { ManagedSourceRepo } from "../store/managed-sources.js"
import { AdminCaller, ManagementApi } from "./api.js"
import { ifMatchRevision, MAX_BODY_BYTES, noFields, readJsonObject } from "./body.js"
import { apiError, requestId } from "./errors.js"

/** An OpenAPI document may be sent in the body: that route alone reads up to 32 MiB. */
export const MAX_IMPORT_BODY_BYTES = 32 * 1024 * 1024

/** A refusal of the shared writes (src/sources/writes.ts) as the API's error body. */
const asApiError = <A, R>(effect: Effect.Effect<A, SourceWriteRefused, R>) =>
  Effect.catchTag(effect, "SourceWriteRefused", (refused) => apiError(refused.status, refused.code, refused.message))

/**
 * The handlers of one kind of managed tool source (docs/management-api.md, "Tool sources"): the HTTP
 * side only — the body, If-Match, the caller — around the writes the console's pages call too.
 */
const sourceHandlers = (kind: SourceKind) =>
  Effect.gen(function* () {
    const writes = yield* sourceWrites(kind)
    const actor = Effect.all({ userId: Effect.map(AdminCaller, (admin) => admin.userId), requestId })

    /** The body of a write: JSON, at most 1 MiB (32 MiB for an OpenAPI import, which may carry the document). */
    const readBody = (request: HttpServerRequest.HttpServerRequest) =>
      readJsonObject(request, kind === "openapi_import" ? MAX_IMPORT_BODY_BYTES : MAX_BODY_BYTES)

    return {
      list: writes.list,
      read: (id: string) => asApiError(writes.read(id)),
      create: (request: HttpServerRequest.HttpServerRequest) =>
        Effect.gen(function* () {
          const body = yield* readBody(request)
          return yield* asApiError(writes.create(body, yield* actor))
        }),
      update: (request: HttpServerRequest.HttpServerRequest, id: string) =>
        Effect.gen(function* () {
          const revision = yield* ifMatchRevision(request)
          const body = yield* readBody(request)
          return yield* asApiError(writes.update(id, revision, body, yield* actor))
        }),
      remove: (request: HttpServerRequest.HttpServerRequest, id: string) =>
        Effect.gen(function* () {
          const revision = yield* ifMatchRevision(request)
          return yield* asApiError(writes.remove(id, revision, yield* actor))
        })
    }
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
      .handleRaw("initialize", ({ request }) => Effect.zipRight(noFields(request), initialize))
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
