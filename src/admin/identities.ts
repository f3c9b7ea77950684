import { HttpApiBuilder, type HttpServerRequest } from "@effect/platform"
import { Effect, Option } from "effect"
import type { PolicyRefused, RefusalCode } from "../policy/refusal.js"
import { type Actor, PolicyWrites } from "../policy/writes.js"
import { GroupRepo } from "../store/groups.js"
import { MembershipRepo } from "../store/memberships.js"
import { UserRepo } from "../store/users.js"
import { AdminCaller, ManagementApi } from "./api.js"
import { decodeBody, ifMatchRevision, readJsonObject } from "./body.js"
import { type ApiStatus, apiError } from "./errors.js"
import {
  effectiveAccessOf,
  groupRecordOf as readGroup,
  userRecordOf as readUser,
  userRecords
} from "./identity-reads.js"
import { groupRecord } from "./records.js"
import { GroupCreateBody, GroupIdentityBody, GroupUpdateBody, type ListParams, UserUpdateBody } from "./schemas.js"

/** The HTTP status of each refusal of a policy write (docs/management-api.md, "Errors"); the console's too. */
export const refusalStatus: Record<RefusalCode, ApiStatus> = {
  invalid_request: 400,
  group_permissions_required: 400,
  builtin_group: 400,
  not_found: 404,
  builtin_administrator_required: 403,
  last_administrator: 409,
  name_taken: 409,
  enrolment_pending: 409,
  precondition_failed: 412,
  stale_version: 409
}

/** `limit` and `cursor` of a listing, each given at most once; `limit` an integer from 1 to 1000. */
export const pageParams = (params: typeof ListParams.Type) =>
  Effect.gen(function* () {
    for (const name of ["limit", "cursor"] as const) {
      if (Array.isArray(params[name])) return yield* apiError(400, "invalid_request", `${name}: give it once`)
    }
    const limit = params.limit as string | undefined
    if (limit !== undefined && !(/^[1-9][0-9]{0,3}$/.test(limit) && Number(limit) <= MAX_PAGE)) {
      return yield* apiError(400, "invalid_request", `limit: expected an integer from 1 to ${MAX_PAGE}`)
    }
    return {
      limit: limit === undefined ? DEFAULT_PAGE : Number(limit),
      cursor: (params.cursor as string | undefined) ?? ""
    }
  })

export const answerRefusal = (refused: PolicyRefused) =>
  apiError(refusalStatus[refused.code], refused.code, refused.description)

const DEFAULT_PAGE = 500
const MAX_PAGE = 1000

/** A group body naming `groups`: groups do not nest; organization groups are mapped with `source_groups` instead. */
const refuseNestedGroups = (body: Record<string, unknown>) =>
  "groups" in body
    ? apiError(
        400,
        "invalid_request",
        "groups: groups do not nest; map organization groups onto a permission group with source_groups."
      )
    : Effect.void

const actorOf = Effect.map(AdminCaller, (admin): Actor => ({ userId: admin.userId, kind: admin.kind }))

/** A user's `permissions`: only an absent, null or entirely empty value is accepted. */
const isEmptyPermissions = (value: unknown) => {
  if (value === undefined || value === null) return true
  if (typeof value !== "object" || Array.isArray(value)) return false
  return Object.values(value).every((field) => Array.isArray(field) && field.length === 0)
}

/**
 * The handlers of `/api/v1/identities` (docs/management-api.md). Reads assemble records from the
 * store; every write goes through PolicyWrites, which decides, records and applies it.
 */
export const IdentitiesLive = HttpApiBuilder.group(ManagementApi, "identities", (handlers) =>
  Effect.gen(function* () {
    const users = yield* UserRepo
    const groups = yield* GroupRepo
    const memberships = yield* MembershipRepo
    const writes = yield* PolicyWrites

    const userRecordOf = (id: string) => Effect.map(readUser(id), Option.getOrThrow)

    const groupRecordOf = (id: string) =>
      Effect.flatMap(readGroup(id), (found) =>
        Option.isSome(found) ? Effect.succeed(found.value) : apiError(404, "not_found", `No group "${id}".`)
      )

    /** If-Match, then the body: a write must say which revision it read before its body is judged. */
    const writeInput = (request: HttpServerRequest.HttpServerRequest) =>
      Effect.gen(function* () {
        const revision = yield* ifMatchRevision(request)
        return { revision, body: yield* readJsonObject(request) }
      })

    return handlers
      .handle("list", ({ urlParams }) =>
        Effect.gen(function* () {
          const { limit, cursor } = yield* pageParams(urlParams)
          const page = yield* users.page(cursor, limit + 1)
          const shown = page.slice(0, limit)
          const allGroups = yield* groups.list
          const counts = yield* memberships.countByGroup
          return {
            users: yield* userRecords(shown),
            groups: allGroups.map((group) => groupRecord(group, counts.get(group.id) ?? 0)),
            ...(page.length > limit ? { next_cursor: shown.at(-1)!.id } : {})
          }
        })
      )
      .handleRaw("update", ({ path, request }) =>
        Effect.gen(function* () {
          const actor = yield* actorOf
          const user = yield* users.findById(path.id)
          if (Option.isSome(user)) {
            const { revision, body } = yield* writeInput(request)
            const update = yield* decodeBody(UserUpdateBody, body)
            if (!isEmptyPermissions(update.permissions)) {
              return yield* apiError(
                400,
                "group_permissions_required",
                "permissions: users never carry permissions; put them on a permission group and add the user to it."
              )
            }
            yield* writes
              .updateUser(actor, path.id, revision, {
                ...(update.enabled === undefined ? {} : { enabled: update.enabled }),
                ...(update.groups === undefined ? {} : { groups: update.groups })
              })
              .pipe(Effect.catchTag("PolicyRefused", answerRefusal))
            return yield* userRecordOf(path.id)
          }
          if ((yield* groups.find(path.id)) === undefined) {
            return yield* apiError(404, "not_found", `No identity "${path.id}".`)
          }
          const { revision, body } = yield* writeInput(request)
          yield* refuseNestedGroups(body)
          const update = yield* decodeBody(GroupIdentityBody, body)
          yield* writes
            .updateGroup(actor, path.id, revision, {
              enabled: update.enabled,
              ...(update.permissions === undefined ? {} : { permissions: update.permissions })
            })
            .pipe(Effect.catchTag("PolicyRefused", answerRefusal))
          return yield* groupRecordOf(path.id)
        })
      )
      .handleRaw("createGroup", ({ request }) =>
        Effect.gen(function* () {
          const actor = yield* actorOf
          const create = yield* decodeBody(GroupCreateBody, yield* readJsonObject(request))
          const id = yield* writes
            .createGroup(actor, {
              name: create.name,
              enabled: create.enabled ?? true,
              permissions: create.permissions ?? { roles: [], scopes: [], access: [] },
              sourceGroups: create.source_groups ?? []
            })
            .pipe(Effect.catchTag("PolicyRefused", answerRefusal))
          return yield* groupRecordOf(id)
        })
      )
      .handleRaw("updateGroup", ({ path, request }) =>
        Effect.gen(function* () {
          const actor = yield* actorOf
          if ((yield* groups.find(path.id)) === undefined) {
            return yield* apiError(404, "not_found", `No group "${path.id}".`)
          }
          const { revision, body } = yield* writeInput(request)
          yield* refuseNestedGroups(body)
          const update = yield* decodeBody(GroupUpdateBody, body)
          yield* writes
            .updateGroup(actor, path.id, revision, {
              ...(update.name === undefined ? {} : { name: update.name }),
              ...(update.enabled === undefined ? {} : { enabled: update.enabled }),
              ...(update.permissions === undefined ? {} : { permissions: update.permissions }),
              ...(update.source_groups === undefined ? {} : { sourceGroups: update.source_groups })
            })
            .pipe(Effect.catchTag("PolicyRefused", answerRefusal))
          return yield* groupRecordOf(path.id)
        })
      )
      .handle("effectiveAccess", ({ path }) =>
        Effect.gen(function* () {
          const outcome = yield* effectiveAccessOf(path.id)
          switch (outcome._tag) {
            case "Missing":
              return yield* apiError(404, "not_found", `No identity "${path.id}".`)
            case "Group":
              return yield* apiError(
                400,
                "invalid_request",
                `"${path.id}" is a group: effective access is shown per user.`
              )
            case "Explained":
              return outcome.access
          }
        })
      )
  })
)
