import { HttpApiBuilder, type HttpServerRequest } from "@effect/platform"
import { Effect } from "effect"
import { Config } from "../config/service.js"
import {
  enrolmentUrl,
  type IssuedLink,
  type LocalAccount,
  LocalAccountAdmin,
  type LocalAccountRefused,
  localAccountRefusalStatus
} from "../identity/local/account-admin.js"
import type { Actor } from "../policy/writes.js"
import { AdminCaller, ManagementApi } from "./api.js"
import { decodeBody, ifMatchRevision, noFields, readJsonObject } from "./body.js"
import { apiError } from "./errors.js"
import { pageParams } from "./identities.js"
import { LocalAccountCreateBody } from "./local-accounts-api.js"

const answerRefusal = (refused: LocalAccountRefused) =>
  apiError(localAccountRefusalStatus[refused.code], refused.code, refused.description)

/** The API's record of a local account: never a password, secret or link token. */
export const localAccountRecord = ({ user, link }: LocalAccount) => ({
  id: user.id,
  username: user.username ?? "",
  display_name: user.display_name,
  status: user.status === "pending" ? ("waiting_for_enrolment" as const) : user.status,
  enrolment_link_expires_at: link === undefined ? null : link.expires_at.toISOString(),
  revision: String(user.revision),
  created_at: user.created_at.toISOString(),
  updated_at: user.updated_at.toISOString()
})

/** The public origin enrolment links point at: the authorization server's (`auth.issuer`). */
export const publicOrigin = Effect.map(Config, (loaded) => new URL(loaded.config.auth.issuer).origin)

export const linkRecord = (issued: IssuedLink, origin: string) => ({
  account: localAccountRecord(issued.account),
  enrolment_url: enrolmentUrl(origin, issued.token),
  enrolment_expires_at: issued.expiresAt.toISOString()
})

const actorOf = Effect.map(AdminCaller, (admin): Actor => ({ userId: admin.userId, kind: admin.kind }))

/**
 * An action's input: If-Match first (a write must say which revision it read), then the body, which is
 * optional; when sent it must be an empty JSON object (an unknown key is a 400 naming it).
 */
const actionInput = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.gen(function* () {
    const revision = yield* ifMatchRevision(request)
    yield* noFields(request)
    return revision
  })

/** The handlers of `/api/v1/local-accounts` (docs/local-accounts.md): each is one LocalAccountAdmin call. */
export const LocalAccountsLive = HttpApiBuilder.group(ManagementApi, "localAccounts", (handlers) =>
  Effect.gen(function* () {
    const accounts = yield* LocalAccountAdmin

    return handlers
      .handle("list", ({ urlParams }) =>
        Effect.gen(function* () {
          const { limit, cursor } = yield* pageParams(urlParams)
          const page = yield* accounts.list(cursor, limit)
          return {
            accounts: page.accounts.map(localAccountRecord),
            ...(page.nextCursor === undefined ? {} : { next_cursor: page.nextCursor })
          }
        })
      )
      .handleRaw("create", ({ request }) =>
        Effect.gen(function* () {
          const actor = yield* actorOf
          const body = yield* decodeBody(LocalAccountCreateBody, yield* readJsonObject(request))
          const issued = yield* accounts
            .create(actor, { username: body.username, displayName: body.display_name })
            .pipe(Effect.catchTag("LocalAccountRefused", answerRefusal))
          return linkRecord(issued, yield* publicOrigin)
        })
      )
      .handle("show", ({ path }) =>
        Effect.map(
          accounts.show(path.id).pipe(Effect.catchTag("LocalAccountRefused", answerRefusal)),
          localAccountRecord
        )
      )
      .handleRaw("disable", ({ path, request }) =>
        Effect.gen(function* () {
          const revision = yield* actionInput(request)
          const account = yield* accounts
            .disable(yield* actorOf, path.id, revision)
            .pipe(Effect.catchTag("LocalAccountRefused", answerRefusal))
          return localAccountRecord(account)
        })
      )
      .handleRaw("enable", ({ path, request }) =>
        Effect.gen(function* () {
          const revision = yield* actionInput(request)
          const account = yield* accounts
            .enable(yield* actorOf, path.id, revision)
            .pipe(Effect.catchTag("LocalAccountRefused", answerRefusal))
          return localAccountRecord(account)
        })
      )
      .handleRaw("resetPassword", ({ path, request }) =>
        Effect.gen(function* () {
          const revision = yield* actionInput(request)
          const issued = yield* accounts
            .resetPassword(yield* actorOf, path.id, revision)
            .pipe(Effect.catchTag("LocalAccountRefused", answerRefusal))
          return linkRecord(issued, yield* publicOrigin)
        })
      )
      .handleRaw("resetMfa", ({ path, request }) =>
        Effect.gen(function* () {
          const revision = yield* actionInput(request)
          const issued = yield* accounts
            .resetMfa(yield* actorOf, path.id, revision)
            .pipe(Effect.catchTag("LocalAccountRefused", answerRefusal))
          return linkRecord(issued, yield* publicOrigin)
        })
      )
  })
)
