import { randomBytes } from "node:crypto"
import { Clock, Effect } from "effect"
import { startSignIn } from "../../src/auth/browser-session.js"
import { configReviewCsrfOf } from "../../src/sources/review/endpoints.js"
import { UserRepo } from "../../src/store/users.js"
import { type TestChanges, testChanges } from "./config-changes.js"
import type { StoreKindUnderTest } from "./databases.js"
import { grantAccessTo } from "./grants.js"
import type { LogCapture } from "./logs.js"
import { inGateway, type OAuthGateway, oauthGateway } from "./oauth-gateway.js"

/**
 * The configuration review pages against a real in-process gateway (the built-in authorization server,
 * real listeners, the stored policy on SQLite or PostgreSQL) with the test stand-in of `ConfigChanges`
 * (test/support/config-changes.ts) among its process-wide services.
 */
export const reviewGateway = (
  options: {
    readonly kind?: StoreKindUnderTest
    readonly logs?: LogCapture
    readonly policyChanges?: Record<string, unknown>
    readonly patch?: Record<string, unknown>
    readonly auth?: (origin: string, adminUrl: string) => Record<string, unknown>
    readonly env?: Record<string, string>
    readonly port?: number
  } = {}
) =>
  Effect.gen(function* () {
    const changes = testChanges()
    const gateway = yield* oauthGateway({
      ...(options.kind === undefined ? {} : { kind: options.kind }),
      ...(options.logs === undefined ? {} : { logs: options.logs }),
      ...(options.auth === undefined ? {} : { auth: options.auth }),
      ...(options.env === undefined ? {} : { env: options.env }),
      ...(options.port === undefined ? {} : { port: options.port }),
      extraServices: changes.layer,
      patch: {
        ...options.patch,
        admin: { approvals: { policy_changes: { enabled: true, ...options.policyChanges } } }
      }
    })
    return { gateway, changes } as { readonly gateway: OAuthGateway; readonly changes: TestChanges }
  })

/** A person in a real permission group with `roles`, signed in in a browser: their cookie and the forms' token. */
export interface SignedInPerson {
  readonly userId: string
  readonly username: string
  readonly name: string
  readonly cookie: string
  readonly csrf: string
}

export const signedInPerson = (
  gateway: OAuthGateway,
  roles: ReadonlyArray<string>,
  options: { readonly scopes?: ReadonlyArray<string>; readonly username?: string } = {}
) =>
  inGateway(gateway)(
    Effect.gen(function* () {
      const users = yield* UserRepo
      const now = yield* Clock.currentTimeMillis
      const username = options.username ?? `user-${randomBytes(6).toString("hex")}`
      const name = `Person ${username}`
      const userId = yield* users.insertLocal({ kind: "local", username, displayName: name, at: new Date(now) })
      yield* grantAccessTo(userId, [], { roles, scopes: options.scopes ?? [] })
      const signIn = yield* startSignIn(userId, now)
      return {
        userId,
        username,
        name,
        cookie: `gw_session=${signIn.token}`,
        csrf: configReviewCsrfOf(signIn.token)
      } satisfies SignedInPerson
    })
  )

/** A browser request to the gateway's public listener (no redirects followed). */
export const send = (
  gateway: OAuthGateway,
  path: string,
  init: {
    readonly method?: string
    readonly headers?: Record<string, string>
    readonly form?: Record<string, string>
  } = {}
) =>
  Effect.promise(async () => {
    const response = await fetch(`${gateway.baseUrl}${path}`, {
      method: init.method ?? (init.form === undefined ? "GET" : "POST"),
      redirect: "manual",
      headers: {
        ...(init.form === undefined ? {} : { "content-type": "application/x-www-form-urlencoded" }),
        ...init.headers
      },
      ...(init.form === undefined ? {} : { body: new URLSearchParams(init.form).toString() })
    })
    return { status: response.status, headers: response.headers, text: await response.text() }
  })

/** Presses a button of a proposal's page the way the page's own form does: same origin, its token. */
export const decide = (
  gateway: OAuthGateway,
  person: Pick<SignedInPerson, "cookie" | "csrf">,
  id: string,
  action: "approve" | "reject",
  headers: Record<string, string> = {},
  form: Record<string, string> = { csrf: person.csrf }
) =>
  send(gateway, `/auth/reviews/${id}/${action}`, {
    headers: { cookie: person.cookie, origin: gateway.baseUrl, "sec-fetch-site": "same-origin", ...headers },
    form
  })
