import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { MAX_DISPLAY_NAME, MAX_LOCAL_USERNAME } from "../identity/local/usernames.js"
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
import { ListParams } from "./schemas.js"

const Timestamp = Schema.String.annotations({ description: "RFC 3339 time, UTC" })

/** A local account as administrators see it (docs/local-accounts.md); never a password, secret or link. */
export const LocalAccountRecord = Schema.Struct({
  id: Schema.String,
  username: Schema.String,
  display_name: Schema.String,
  status: Schema.Literal("waiting_for_enrolment", "enabled", "disabled").annotations({
    description:
      "waiting_for_enrolment: created or reset, its enrolment link not used yet; enabled: may sign in (tools only as its groups grant); disabled"
  }),
  enrolment_link_expires_at: Schema.NullOr(Timestamp).annotations({
    description: "When the live enrolment link stops working; null when there is none"
  }),
  revision: Schema.String.annotations({ description: "Send it back as If-Match to change this account" }),
  created_at: Timestamp,
  updated_at: Timestamp
}).annotations({ identifier: "LocalAccount" })

export const LocalAccountList = Schema.Struct({
  accounts: Schema.Array(LocalAccountRecord),
  next_cursor: Schema.optional(Schema.String).annotations({ description: "Pass as cursor for the next page" })
})

/** The answer of a create or a reset: the account and its new link, shown this once. */
export const LocalAccountLink = Schema.Struct({
  account: LocalAccountRecord,
  enrolment_url: Schema.String.annotations({
    description: "The one-time enrolment link: give it to the person; shown only in this answer"
  }),
  enrolment_expires_at: Timestamp
}).annotations({ identifier: "LocalAccountLink" })

export const LocalAccountCreateBody = Schema.Struct({
  username: Schema.String.annotations({
    description: `Sign-in name: 1 to ${MAX_LOCAL_USERNAME} characters, no whitespace, control, invisible or direction-changing characters; unique ignoring case and Unicode normalization`
  }),
  display_name: Schema.String.annotations({ description: `1 to ${MAX_DISPLAY_NAME} characters` })
})

const IdPath = Schema.Struct({ id: Schema.String })
const IfMatch = Schema.Struct({
  "if-match": Schema.optional(Schema.String).annotations({ description: 'The revision you read, e.g. "3"' })
})

/** An action on one account, at the revision read (`If-Match`): what it answers is `success`. */
const accountAction = <Name extends string, Success extends Schema.Schema.Any>(
  name: Name,
  path: string,
  success: Success,
  summary: string
) =>
  HttpApiEndpoint.post(name, `/local-accounts/:id/${path}`)
    .setPath(IdPath)
    .setHeaders(IfMatch)
    .addSuccess(success)
    .addError(NotFound)
    .addError(Conflict)
    .addError(PreconditionFailed)
    .addError(PreconditionRequired)
    .addError(PayloadTooLarge)
    .addError(UnsupportedMediaType)
    .annotate(OpenApi.Summary, summary)

/** `/api/v1/local-accounts`: local accounts people are given, and their enrolment links (docs/local-accounts.md). */
export class LocalAccountsApi extends HttpApiGroup.make("localAccounts")
  .add(
    HttpApiEndpoint.get("list", "/local-accounts")
      .setUrlParams(ListParams)
      .addSuccess(LocalAccountList)
      .annotate(OpenApi.Summary, "Lists local accounts (paged); not the built-in administrator")
  )
  .add(
    HttpApiEndpoint.post("create", "/local-accounts")
      .setPayload(LocalAccountCreateBody)
      .addSuccess(LocalAccountLink, { status: 201 })
      .addError(Conflict)
      .addError(PayloadTooLarge)
      .addError(UnsupportedMediaType)
      .annotate(OpenApi.Summary, "Creates a local account waiting for enrolment, and its one-time enrolment link")
  )
  .add(
    HttpApiEndpoint.get("show", "/local-accounts/:id")
      .setPath(IdPath)
      .addSuccess(LocalAccountRecord)
      .addError(NotFound)
      .annotate(OpenApi.Summary, "One local account")
  )
  .add(
    accountAction(
      "disable",
      "disable",
      LocalAccountRecord,
      "Disables the account: its sessions end and its enrolment link dies (If-Match)"
    )
  )
  .add(
    accountAction(
      "enable",
      "enable",
      LocalAccountRecord,
      "Enables the account again (If-Match); one that never enrolled waits for a new link"
    )
  )
  .add(
    accountAction(
      "resetPassword",
      "reset-password",
      LocalAccountLink,
      "Removes the password and authenticator, ends the sessions and answers a new enrolment link (If-Match)"
    )
  )
  .add(
    accountAction(
      "resetMfa",
      "reset-mfa",
      LocalAccountLink,
      "Removes the authenticator and password, ends the sessions and answers a new enrolment link (If-Match)"
    )
  )
  .addError(BadRequest)
  .middleware(AdminAuth)
  .prefix("/api/v1") {}
