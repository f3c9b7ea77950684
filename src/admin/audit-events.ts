import { HttpApiBuilder } from "@effect/platform"
import { Data, Effect } from "effect"
import { isRecord } from "../json.js"
import { type AuditEventListed, AuditEventRepo } from "../store/audit-events.js"
import { ManagementApi } from "./api.js"
import { decodePosition, encodePosition } from "./cursor.js"
import { apiError } from "./errors.js"

/**
 * The audit trail of identity and configuration changes, newest first, filtered by actor and target
 * and paged by an opaque cursor (docs/management-api.md, "Audit events"): one function, which
 * `GET /api/v1/audit-events` and the console's audit page both call.
 */

export const DEFAULT_AUDIT_PAGE = 50
export const MAX_AUDIT_PAGE = 200
const MAX_FILTER_LENGTH = 256

/** A query value as it came: absent, once, or repeated. */
type QueryValue = string | ReadonlyArray<string> | undefined

export interface AuditQuery {
  readonly actor?: QueryValue
  readonly target?: QueryValue
  readonly limit?: QueryValue
  readonly cursor?: QueryValue
}

/** A query parameter that is wrong: which, and why. */
export class AuditQueryInvalid extends Data.TaggedError("AuditQueryInvalid")<{
  readonly parameter: keyof AuditQuery
  readonly message: string
}> {}

export interface AuditEventItem {
  readonly id: string
  readonly at: string
  readonly actor: { readonly id: string; readonly name: string | null } | null
  readonly action: string
  readonly target: { readonly kind: string; readonly id: string }
  readonly detail: Record<string, unknown>
  readonly request_id: string | null
}

export interface AuditPage {
  readonly items: ReadonlyArray<AuditEventItem>
  /** Pass as `cursor` for the next (older) page; absent on the last page. */
  readonly next_cursor?: string
}

const invalid = (parameter: keyof AuditQuery, message: string) =>
  Effect.fail(new AuditQueryInvalid({ parameter, message: `${parameter}: ${message}` }))

const single = (parameter: keyof AuditQuery, value: QueryValue) =>
  typeof value === "string" || value === undefined ? Effect.succeed(value) : invalid(parameter, "give it once")

const filterOf = (parameter: "actor" | "target", value: string | undefined) => {
  if (value === undefined || value === "") return Effect.succeed(undefined)
  return value.length > MAX_FILTER_LENGTH
    ? invalid(parameter, `at most ${MAX_FILTER_LENGTH} characters`)
    : Effect.succeed(value)
}

const itemOf = (event: AuditEventListed): AuditEventItem => {
  let detail: unknown
  try {
    detail = JSON.parse(event.detail)
  } catch {
    detail = {}
  }
  return {
    id: event.id,
    at: event.at.toISOString(),
    actor: event.actor_id === null ? null : { id: event.actor_id, name: event.actor_name },
    action: event.action,
    target: { kind: event.target_kind, id: event.target_id },
    detail: isRecord(detail) ? detail : {},
    request_id: event.request_id
  }
}

/** One page of the audit trail for `query` (actor and target: exact ids; empty means any). */
export const listAuditEvents = Effect.fn("AuditEvents.list")(function* (query: AuditQuery) {
  const actor = yield* filterOf("actor", yield* single("actor", query.actor))
  const target = yield* filterOf("target", yield* single("target", query.target))
  const limitText = yield* single("limit", query.limit)
  if (limitText !== undefined && !(/^[1-9][0-9]{0,2}$/.test(limitText) && Number(limitText) <= MAX_AUDIT_PAGE)) {
    return yield* invalid("limit", `expected an integer from 1 to ${MAX_AUDIT_PAGE}`)
  }
  const limit = limitText === undefined ? DEFAULT_AUDIT_PAGE : Number(limitText)
  const cursorText = yield* single("cursor", query.cursor)
  const before = cursorText === undefined || cursorText === "" ? undefined : decodePosition(cursorText)
  if (cursorText !== undefined && cursorText !== "" && before === undefined) {
    return yield* invalid("cursor", "not a cursor this listing gave out")
  }
  const rows = yield* (yield* AuditEventRepo).page({ actorId: actor, targetId: target, limit: limit + 1, before })
  const shown = rows.slice(0, limit)
  return {
    items: shown.map(itemOf),
    ...(rows.length > limit ? { next_cursor: encodePosition(shown.at(-1)!) } : {})
  } satisfies AuditPage
})

/** `GET /api/v1/audit-events`. */
export const AuditEventsLive = HttpApiBuilder.group(ManagementApi, "auditEvents", (handlers) =>
  handlers.handle("list", ({ urlParams }) =>
    listAuditEvents(urlParams).pipe(
      Effect.catchTag("AuditQueryInvalid", (refused) => apiError(400, "invalid_request", refused.message))
    )
  )
)
