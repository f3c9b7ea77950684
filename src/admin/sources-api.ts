import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { ManagedBackend, ManagedHttpTool, ManagedToolGroup } from "../sources/definitions.js"
import { SourceKind } from "../sources/schema.js"
import { OpenApiImportBody } from "../sources/writes.js"
import { ProposalStateColumn } from "../store/source-proposals.js"
import {
  BadRequest,
  Conflict,
  NotFound,
  PayloadTooLarge,
  PreconditionFailed,
  PreconditionRequired,
  UnsupportedMediaType
} from "./errors.js"
import { AdminAuth } from "./middleware.js"

/**
 * The Management API of managed tool sources (docs/management-api.md, "Tool sources"): the four kinds,
 * their initialization and the proposals under review. Bodies are read and decoded strictly by the
 * handlers (src/admin/sources.ts); the payload schemas here document them.
 */

const Timestamp = Schema.String.annotations({ description: "RFC 3339 time, UTC" })

export const SourceRecord = Schema.Struct({
  kind: SourceKind,
  id: Schema.String,
  revision: Schema.String.annotations({ description: "Send it back as If-Match to change or delete this record" }),
  definition: Schema.Record({ key: Schema.String, value: Schema.Unknown }).annotations({
    description: 'The definition; every secret shown as {"configured": true}'
  }),
  updated_at: Schema.NullOr(Timestamp),
  updated_by: Schema.NullOr(Schema.String)
}).annotations({ identifier: "ToolSource" })
export type SourceRecord = typeof SourceRecord.Type

export const SourceList = Schema.Struct({
  managed: Schema.Boolean.annotations({
    description: "true once managed storage is initialized; before, the items are the YAML backends"
  }),
  items: Schema.Array(SourceRecord)
}).annotations({ identifier: "ToolSourceList" })

export const PendingApproval = Schema.Struct({
  pending_approval: Schema.Literal(true),
  approval_id: Schema.String,
  approval_url: Schema.String
}).annotations({ identifier: "PendingApproval" })

export const Initialized = Schema.Struct({
  managed: Schema.Literal(true),
  initialized_at: Timestamp,
  imported: Schema.Array(Schema.String).annotations({ description: "The YAML backends imported by this call" })
}).annotations({ identifier: "ToolSourcesInitialized" })

const Person = Schema.Struct({ user_id: Schema.String, name: Schema.String })
const ProposalState = ProposalStateColumn
const ProposalFields = {
  id: Schema.String,
  kind: SourceKind,
  target_id: Schema.String,
  action: Schema.Literal("create", "update"),
  state: ProposalState,
  proposed_by: Person,
  created_at: Timestamp,
  decided_by: Schema.optional(Person),
  decided_at: Schema.optional(Timestamp),
  failure: Schema.optional(Schema.String)
}
export const ProposalSummaryRecord = Schema.Struct(ProposalFields).annotations({ identifier: "ProposalSummary" })
export const ProposalDetailRecord = Schema.Struct({
  ...ProposalFields,
  diff: Schema.Array(Schema.Struct({ path: Schema.String, before: Schema.Unknown, after: Schema.Unknown }))
}).annotations({ identifier: "Proposal" })

const IdPath = Schema.Struct({ id: Schema.String })
const IfMatch = Schema.Struct({
  "if-match": Schema.optional(Schema.String).annotations({ description: 'The revision you read, e.g. "3"' })
})

/** The five endpoints of one kind: list, read, create, update (If-Match), delete (If-Match). */
const sourceGroup = <const Name extends string>(
  name: Name,
  one: string,
  path: "/backends" | "/http-tools" | "/openapi-imports" | "/tool-groups",
  // biome-ignore lint/suspicious/noExplicitAny: the payload documents the body; handlers decode it
  body: Schema.Schema<any, any>
) =>
  HttpApiGroup.make(name)
    .add(
      HttpApiEndpoint.get("list", path)
        .addSuccess(SourceList)
        .annotate(OpenApi.Summary, `Lists every ${one}; secrets only as configured`)
    )
    .add(
      HttpApiEndpoint.get("read", `${path}/:id`)
        .setPath(IdPath)
        .addSuccess(SourceRecord)
        .addError(NotFound)
        .annotate(OpenApi.Summary, `One ${one}`)
    )
    .add(
      HttpApiEndpoint.post("create", path)
        .setPayload(body)
        .addSuccess(SourceRecord, { status: 201 })
        .addSuccess(PendingApproval, { status: 202 })
        .addError(Conflict)
        .addError(PayloadTooLarge)
        .addError(UnsupportedMediaType)
        .annotate(
          OpenApi.Summary,
          `Creates a ${one} and applies it in a new generation; 202 when configuration review is on`
        )
    )
    .add(
      HttpApiEndpoint.put("update", `${path}/:id`)
        .setPath(IdPath)
        .setHeaders(IfMatch)
        .setPayload(body)
        .addSuccess(SourceRecord)
        .addSuccess(PendingApproval, { status: 202 })
        .addError(NotFound)
        .addError(Conflict)
        .addError(PreconditionFailed)
        .addError(PreconditionRequired)
        .addError(PayloadTooLarge)
        .addError(UnsupportedMediaType)
        .annotate(
          OpenApi.Summary,
          `Replaces a ${one} (If-Match); {"configured": true} keeps a stored secret; 202 when configuration review is on (not for a pure disable)`
        )
    )
    .add(
      HttpApiEndpoint.del("delete", `${path}/:id`)
        .setPath(IdPath)
        .setHeaders(IfMatch)
        .addSuccess(HttpApiSchema.NoContent)
        .addError(NotFound)
        .addError(Conflict)
        .addError(PreconditionFailed)
        .addError(PreconditionRequired)
        .annotate(OpenApi.Summary, `Deletes a ${one} (If-Match), at once; 409 while a tool group uses it`)
    )
    .addError(BadRequest)
    .middleware(AdminAuth)
    .prefix("/api/v1")

export const BackendsApi = sourceGroup("backends", "backend", "/backends", ManagedBackend)
export const HttpToolsApi = sourceGroup("httpTools", "HTTP tool", "/http-tools", ManagedHttpTool)
export const OpenApiImportsApi = sourceGroup("openApiImports", "OpenAPI import", "/openapi-imports", OpenApiImportBody)
export const ToolGroupsApi = sourceGroup("toolGroups", "tool group", "/tool-groups", ManagedToolGroup)

const StateParams = Schema.Struct({ state: Schema.optional(ProposalState) })

/** `/api/v1/tool-sources/initialize` and `/api/v1/proposals`. */
export class ToolSourcesApi extends HttpApiGroup.make("toolSources")
  .add(
    HttpApiEndpoint.post("initialize", "/tool-sources/initialize")
      .addSuccess(Initialized)
      .annotate(
        OpenApi.Summary,
        "Initializes managed storage: imports the YAML backends once; afterwards the database supplies backends"
      )
  )
  .add(
    HttpApiEndpoint.get("proposals", "/proposals")
      .setUrlParams(StateParams)
      .addSuccess(Schema.Struct({ items: Schema.Array(ProposalSummaryRecord) }))
      .annotate(OpenApi.Summary, "Configuration changes under review and decided, newest first")
  )
  .add(
    HttpApiEndpoint.get("proposal", "/proposals/:id")
      .setPath(IdPath)
      .addSuccess(ProposalDetailRecord)
      .addError(NotFound)
      .annotate(OpenApi.Summary, "One proposal with its diff against what is active; secrets masked")
  )
  .addError(BadRequest)
  .middleware(AdminAuth)
  .prefix("/api/v1") {}
