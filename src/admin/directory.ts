import { HttpApiBuilder } from "@effect/platform"
import { Clock, Effect } from "effect"
import { DirectorySnapshots } from "../identity/directory/apply.js"
import { type DirectoryConnection, directoryConnections, directoryProvider } from "../identity/directory/provider.js"
import { DirectoryRepo } from "../store/directory.js"
import { AdminCaller, ManagementApi } from "./api.js"
import { decodeBody, ifMatchRevision, readJsonObject } from "./body.js"
import { apiError, requestId } from "./errors.js"
import { answerRefusal } from "./identities.js"
import type { DirectoryConnectionRecord } from "./schemas.js"
import { VersionResetBody } from "./schemas.js"

const isConnection = (name: string): name is DirectoryConnection =>
  (directoryConnections as ReadonlyArray<string>).includes(name)

/**
 * The handlers of `/api/v1/directory` (docs/directory.md, "Resetting a provider's version"): each
 * configured identity connection's directory version, and the administrator's way back when a push
 * set one so high that every later push is `409 stale_version`.
 */
export const DirectoryLive = HttpApiBuilder.group(ManagementApi, "directory", (handlers) =>
  Effect.gen(function* () {
    const repo = yield* DirectoryRepo
    const snapshots = yield* DirectorySnapshots

    /** The record of `connection`, or undefined when it is not configured. */
    const recordOf = (connection: DirectoryConnection) =>
      Effect.gen(function* () {
        const provider = yield* directoryProvider(connection)
        if (provider === undefined) return undefined
        const stored = yield* repo.versionRecord(provider)
        return {
          connection,
          provider,
          version: stored?.version ?? null,
          revision: String(stored?.version ?? 0),
          applied_at: stored?.applied_at.toISOString() ?? null
        } satisfies DirectoryConnectionRecord
      })

    const configured = (name: string) =>
      Effect.gen(function* () {
        const record = isConnection(name) ? yield* recordOf(name) : undefined
        if (record !== undefined) return record
        return yield* apiError(
          404,
          "not_found",
          isConnection(name)
            ? `No ${name} identity connection is configured.`
            : "No such identity connection: name oidc or ldap."
        )
      })

    return handlers
      .handle("read", () =>
        Effect.map(Effect.forEach(directoryConnections, recordOf), (records) => ({
          connections: records.filter((record) => record !== undefined)
        }))
      )
      .handleRaw("resetVersion", ({ path, request }) =>
        Effect.gen(function* () {
          const admin = yield* AdminCaller
          const before = yield* configured(path.connection)
          const expected = yield* ifMatchRevision(request)
          const body = yield* decodeBody(VersionResetBody, yield* readJsonObject(request))
          yield* snapshots
            .resetVersion({
              provider: before.provider,
              connection: before.connection,
              expected,
              next: body.version,
              actorId: admin.userId,
              requestId: yield* requestId,
              at: new Date(yield* Clock.currentTimeMillis)
            })
            .pipe(Effect.catchTag("PolicyRefused", answerRefusal))
          return yield* configured(before.connection)
        })
      )
  })
)
