import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiMiddleware, HttpApiSecurity, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { ConnectionDraftBody } from "../identity/providers/draft.js"
import {
  IdentityProvidersBody,
  IdentityProvidersRecord,
  ProbeRecord,
  TestRecord
} from "../identity/providers/settings.js"
import { version } from "../version.js"
import {
  BadRequest,
  Conflict,
  Forbidden,
  NotFound,
  PayloadTooLarge,
  PreconditionFailed,
  PreconditionRequired,
  TooManyRequests,
  Unauthorized,
  UnsupportedMediaType
} from "./errors.js"
import { LocalAccountsApi } from "./local-accounts-api.js"
import { AdminAuth, AdminCaller } from "./middleware.js"
import {
  DirectoryConnectionRecord,
  DirectoryRecord,
  EffectiveAccess,
  GroupCreateBody,
  GroupRecord,
  GroupUpdateBody,
  IdentityList,
  IdentityUpdateBody,
  ListParams,
  UserRecord,
  VersionResetBody
} from "./schemas.js"
import { BackendsApi, HttpToolsApi, OpenApiImportsApi, ToolGroupsApi, ToolSourcesApi } from "./sources-api.js"

export { AdminAuth, AdminCaller }

/**
 * `GET /api/v1/approvals/delivery` is for the `admin` and the `security_reviewer` roles: the same
 * token check as `AdminAuth`, holding all the scopes of either role.
 */
export class DeliveryAuth extends HttpApiMiddleware.Tag<DeliveryAuth>()("DeliveryAuth", {
  failure: Schema.Union(Unauthorized, Forbidden),
  provides: AdminCaller,
  security: { bearer: HttpApiSecurity.bearer }
}) {}

const QueueStatus = Schema.Struct({
  enabled: Schema.Boolean,
  pending: Schema.NullOr(Schema.Int).annotations({
    description: "Events committed and not yet acknowledged; null when this queue cannot report it"
  }),
  failed: Schema.NullOr(Schema.Int).annotations({
    description: "Of those, events whose delivery failed and waits for a retry"
  }),
  oldest_pending_age_seconds: Schema.NullOr(Schema.Int),
  last_error: Schema.NullOr(Schema.String).annotations({
    description: "Class of the last failure of a pending event: http_<status>, timeout, tls, connect, dns"
  })
})

export const DeliveryStatusRecord = Schema.Struct({ notifications: QueueStatus, archive: QueueStatus })

/** `/api/v1/approvals/delivery`: how approval webhooks and the audit archive are keeping up. */
export class ApprovalDeliveryApi extends HttpApiGroup.make("approvalDelivery")
  .add(
    HttpApiEndpoint.get("delivery", "/approvals/delivery")
      .addSuccess(DeliveryStatusRecord)
      .annotate(
        OpenApi.Summary,
        "Approval webhook and audit archive queues: enabled, pending and failed counts, oldest pending age, last error class"
      )
  )
  .addError(BadRequest)
  .middleware(DeliveryAuth)
  .prefix("/api/v1") {}

const BackendStatus = Schema.Struct({
  id: Schema.String,
  required: Schema.Boolean,
  state: Schema.Literal("connecting", "ready", "unavailable"),
  last_error: Schema.NullOr(Schema.String).annotations({
    description:
      "Class of the last connection or probe failure: connect, dns, tls, timeout, http_<status>, auth, protocol, session_lost, other; null when none yet"
  }),
  tools: Schema.NullOr(Schema.Int).annotations({ description: "Tools in its catalog; null without a catalog" }),
  catalog_age_seconds: Schema.NullOr(Schema.Number).annotations({
    description: "Seconds since its catalog was fetched; null before the first fetch"
  }),
  inherited_catalog: Schema.Boolean.annotations({
    description: "Serving the catalog of the previous generation while unavailable"
  })
})

export const StatusRecord = Schema.Struct({
  version: Schema.String,
  generation: Schema.Struct({ id: Schema.Int }),
  ready: Schema.Boolean.annotations({ description: "What /readyz answers now" }),
  backends: Schema.Array(BackendStatus),
  outboxes: DeliveryStatusRecord,
  store: Schema.Struct({
    ready: Schema.Boolean,
    reason: Schema.NullOr(Schema.String).annotations({ description: "The open outage's reason, in fixed words" }),
    latency_ms: Schema.NullOr(Schema.Number).annotations({
      description: "One SELECT 1 timed now; null when it failed or took over 2 s"
    })
  }),
  tracing: Schema.Struct({ enabled: Schema.Boolean })
})

/** `/api/v1/status`: the health picture an operator reads (docs/management-api.md, "Status"). */
export class StatusApi extends HttpApiGroup.make("status")
  .add(
    HttpApiEndpoint.get("status", "/status")
      .addSuccess(StatusRecord)
      .annotate(
        OpenApi.Summary,
        "Health: per-backend state and last error class, generation id, outbox depths, store latency"
      )
  )
  .addError(BadRequest)
  .middleware(AdminAuth)
  .prefix("/api/v1") {}

const IdPath = Schema.Struct({ id: Schema.String })
const IfMatch = Schema.Struct({
  "if-match": Schema.optional(Schema.String).annotations({ description: 'The revision you read, e.g. "3"' })
})

/** `/api/v1/identities`: users, groups, memberships, permissions, effective access. */
export class IdentitiesApi extends HttpApiGroup.make("identities")
  .add(
    HttpApiEndpoint.get("list", "/identities")
      .setUrlParams(ListParams)
      .addSuccess(IdentityList)
      .annotate(OpenApi.Summary, "Lists users (paged) and every group")
  )
  .add(
    HttpApiEndpoint.put("update", "/identities/:id")
      .setPath(IdPath)
      .setHeaders(IfMatch)
      .setPayload(IdentityUpdateBody)
      .addSuccess(Schema.Union(UserRecord, GroupRecord))
      .addError(NotFound)
      .addError(Conflict)
      .addError(PreconditionFailed)
      .addError(PreconditionRequired)
      .addError(PayloadTooLarge)
      .addError(UnsupportedMediaType)
      .annotate(OpenApi.Summary, "Enables or disables a user or group; sets a user's groups or a group's permissions")
  )
  .add(
    HttpApiEndpoint.post("createGroup", "/identities/groups")
      .setPayload(GroupCreateBody)
      .addSuccess(GroupRecord, { status: 201 })
      .addError(Conflict)
      .addError(PayloadTooLarge)
      .addError(UnsupportedMediaType)
      .annotate(OpenApi.Summary, "Creates an independent permission group")
  )
  .add(
    HttpApiEndpoint.put("updateGroup", "/identities/groups/:id")
      .setPath(IdPath)
      .setHeaders(IfMatch)
      .setPayload(GroupUpdateBody)
      .addSuccess(GroupRecord)
      .addError(NotFound)
      .addError(Conflict)
      .addError(PreconditionFailed)
      .addError(PreconditionRequired)
      .addError(PayloadTooLarge)
      .addError(UnsupportedMediaType)
      .annotate(OpenApi.Summary, "Changes a group: name, enabled, permissions, mapped organization groups")
  )
  .add(
    HttpApiEndpoint.get("effectiveAccess", "/identities/:id/effective-access")
      .setPath(IdPath)
      .addSuccess(EffectiveAccess)
      .addError(NotFound)
      .annotate(OpenApi.Summary, "Per published tool: allowed or denied, and which group decides it")
  )
  .addError(BadRequest)
  .middleware(AdminAuth)
  .prefix("/api/v1") {}

/** `/api/v1/identity-providers`: the stored OIDC and LDAP connections (docs/enterprise-sign-in.md). */
export class IdentityProvidersApi extends HttpApiGroup.make("identityProviders")
  .add(
    HttpApiEndpoint.get("read", "/identity-providers")
      .addSuccess(IdentityProvidersRecord)
      .annotate(OpenApi.Summary, "The OIDC and LDAP connections; secrets only as configured or not")
  )
  .add(
    HttpApiEndpoint.put("replace", "/identity-providers")
      .setHeaders(IfMatch)
      .setPayload(IdentityProvidersBody)
      .addSuccess(IdentityProvidersRecord)
      .addError(Conflict)
      .addError(PreconditionFailed)
      .addError(PreconditionRequired)
      .addError(PayloadTooLarge)
      .addError(UnsupportedMediaType)
      .annotate(
        OpenApi.Summary,
        "Replaces both connections (If-Match, initially 0); applies at once; a replaced or disabled connection's sessions are revoked"
      )
  )
  .add(
    HttpApiEndpoint.post("probe", "/identity-providers/probe")
      .setPayload(ConnectionDraftBody)
      .addSuccess(ProbeRecord)
      .addError(PayloadTooLarge)
      .addError(UnsupportedMediaType)
      .annotate(
        OpenApi.Summary,
        "Checks that a draft connection answers (discovery and keys, or TLS and bind); saves nothing"
      )
  )
  .add(
    HttpApiEndpoint.post("test", "/identity-providers/test")
      .setPayload(ConnectionDraftBody)
      .addSuccess(TestRecord)
      .addError(PayloadTooLarge)
      .addError(TooManyRequests)
      .addError(UnsupportedMediaType)
      .annotate(
        OpenApi.Summary,
        "Tries a draft connection: OIDC answers a one-use start_url to open in a browser; LDAP signs username in and answers the result"
      )
  )
  .add(
    HttpApiEndpoint.get("testResult", "/identity-providers/tests/:id")
      .setPath(IdPath)
      .addSuccess(TestRecord)
      .addError(NotFound)
      .annotate(
        OpenApi.Summary,
        "An OIDC connection test's result, for the administrator who started it, for 5 minutes"
      )
  )
  .addError(BadRequest)
  .middleware(AdminAuth)
  .prefix("/api/v1") {}

const ConnectionPath = Schema.Struct({ connection: Schema.String })

/** `/api/v1/directory`: the directory versions of the identity connections (docs/directory.md). */
export class DirectoryApi extends HttpApiGroup.make("directory")
  .add(
    HttpApiEndpoint.get("read", "/directory")
      .addSuccess(DirectoryRecord)
      .annotate(OpenApi.Summary, "Each configured identity connection's directory version (null: no snapshot yet)")
  )
  .add(
    HttpApiEndpoint.post("resetVersion", "/directory/:connection/reset-version")
      .setPath(ConnectionPath)
      .setHeaders(IfMatch)
      .setPayload(VersionResetBody)
      .addSuccess(DirectoryConnectionRecord)
      .addError(NotFound)
      .addError(PreconditionFailed)
      .addError(PreconditionRequired)
      .addError(PayloadTooLarge)
      .addError(UnsupportedMediaType)
      .annotate(
        OpenApi.Summary,
        "Lowers a connection's directory version (If-Match: the version read), e.g. after a push sent one far too high; audited"
      )
  )
  .addError(BadRequest)
  .middleware(AdminAuth)
  .prefix("/api/v1") {}

const AuditQueryValue = Schema.Union(Schema.String, Schema.Array(Schema.String))
const auditParameter = (jsonSchema: Record<string, unknown>) =>
  Schema.optional(AuditQueryValue.annotations({ jsonSchema: { type: "string", ...jsonSchema } }))

const AuditEventRecord = Schema.Struct({
  id: Schema.String,
  at: Schema.String.annotations({ description: "RFC 3339 time, UTC" }),
  actor: Schema.NullOr(
    Schema.Struct({
      id: Schema.String,
      name: Schema.NullOr(Schema.String).annotations({ description: "The user's display name; null when no such user" })
    })
  ).annotations({ description: "Who made the change; null when the gateway itself did (e.g. a directory push)" }),
  action: Schema.String,
  target: Schema.Struct({ kind: Schema.String, id: Schema.String }),
  detail: Schema.Record({ key: Schema.String, value: Schema.Unknown }).annotations({
    description: "What changed; never a secret"
  }),
  request_id: Schema.NullOr(Schema.String)
}).annotations({ identifier: "AuditEvent" })

/** `/api/v1/audit-events`: the audit trail of identity and configuration changes (docs/management-api.md). */
export class AuditEventsApi extends HttpApiGroup.make("auditEvents")
  .add(
    HttpApiEndpoint.get("list", "/audit-events")
      .setUrlParams(
        Schema.Struct({
          actor: auditParameter({ description: "Only changes made by this user id" }),
          target: auditParameter({ description: "Only changes of this target id (user, group, tool source, …)" }),
          limit: auditParameter({
            pattern: "^[1-9][0-9]{0,2}$",
            description: "Events per page: an integer from 1 to 200 (default 50)"
          }),
          cursor: auditParameter({ description: "The previous page's next_cursor" })
        })
      )
      .addSuccess(
        Schema.Struct({
          items: Schema.Array(AuditEventRecord),
          next_cursor: Schema.optional(Schema.String).annotations({
            description: "Pass as cursor for the next (older) page; absent on the last page"
          })
        }).annotations({ identifier: "AuditEventList" })
      )
      .annotate(OpenApi.Summary, "The audit trail of identity and configuration changes, newest first, paged")
  )
  .addError(BadRequest)
  .middleware(AdminAuth)
  .prefix("/api/v1") {}

export class ManagementApi extends HttpApi.make("management")
  .add(IdentitiesApi)
  .add(LocalAccountsApi)
  .add(IdentityProvidersApi)
  .add(DirectoryApi)
  .add(ApprovalDeliveryApi)
  .add(BackendsApi)
  .add(HttpToolsApi)
  .add(OpenApiImportsApi)
  .add(ToolGroupsApi)
  .add(ToolSourcesApi)
  .add(StatusApi)
  .add(AuditEventsApi)
  .annotate(OpenApi.Title, "gateway Management API")
  .annotate(OpenApi.Version, version)
  .annotate(
    OpenApi.Description,
    "Identities, groups, permissions, local accounts, identity connections, directory versions and tool sources of the gateway (docs/management-api.md). Writes need If-Match."
  ) {}

/** Where the generated OpenAPI document is served (and committed: docs/api/openapi.json). */
export const openApiPath = "/api/v1/openapi.json"
