import { HttpRouter, HttpServerRequest } from "@effect/platform"
import { RouteNotFound } from "@effect/platform/HttpServerError"
import { Effect } from "effect"
import {
  approveEndpoint,
  detailEndpoint,
  listEndpoint,
  rejectEndpoint,
  revokeEndpoint,
  stepUpEndpoint
} from "../approvals/review/endpoints.js"
import { Config } from "../config/service.js"
import { otherMethods } from "../http/methods.js"
import { directoryEndpoint } from "../identity/directory/endpoint.js"
import { authorizeEndpoint } from "./authorize/endpoint.js"
import { connectionTestStartEndpoint } from "./login/connection-test.js"
import { consentEndpoint } from "./login/consent.js"
import { enrolEndpoint, enrolmentFormEndpoint } from "./login/enrol.js"
import { ldapLoginEndpoint } from "./login/ldap.js"
import { localLoginEndpoint } from "./login/local.js"
import { enrollEndpoint, mfaEndpoint } from "./login/mfa.js"
import { signInEndpoint } from "./login/sign-in.js"
import { upstreamCallbackEndpoint, upstreamStartEndpoint } from "./login/upstream.js"
import { metadataEndpoint } from "./metadata.js"
import { grantsEndpoint, revokeGrantEndpoint } from "./portal.js"
import { tokenEndpoint } from "./token/endpoint.js"

/** The paths of the built-in authorization server (docs/authorization-server.md). */
export const ssoPaths = {
  metadata: "/.well-known/oauth-authorization-server/sso",
  openidMetadata: "/.well-known/openid-configuration/sso",
  signIn: "/sso",
  authorize: "/sso/authorize",
  token: "/sso/token",
  localLogin: "/sso/login/local",
  ldapLogin: "/sso/login/ldap",
  upstreamLogin: "/sso/login/upstream",
  connectionTest: "/sso/login/test",
  directory: "/sso/directory",
  callback: "/sso/callback",
  mfa: "/sso/mfa",
  enroll: "/sso/mfa/enroll",
  /** A local account's enrolment link (docs/local-accounts.md). */
  enrolment: "/sso/enrol",
  consent: "/sso/consent",
  grants: "/sso/grants",
  revokeGrant: "/sso/grants/revoke",
  approvals: "/sso/approvals",
  approval: "/sso/approvals/:id",
  approve: "/sso/approvals/:id/approve",
  reject: "/sso/approvals/:id/reject",
  revoke: "/sso/approvals/:id/revoke",
  stepUp: "/sso/approvals/:id/step-up"
} as const

/**
 * In `external` mode there is no authorization server: its paths (and the configuration review's, which
 * sign in through it) are 404 like any other unknown path.
 */
export const builtinOnly = <A, E, R>(
  handler: Effect.Effect<A, E, R>
): Effect.Effect<A, E | RouteNotFound, R | Config | HttpServerRequest.HttpServerRequest> =>
  Effect.flatMap(
    Config,
    (loaded): Effect.Effect<A, E | RouteNotFound, R | HttpServerRequest.HttpServerRequest> =>
      loaded.config.auth.mode === "builtin"
        ? handler
        : Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => Effect.fail(new RouteNotFound({ request })))
  )

/** The /sso router, mounted once by `src/http/routes.ts`. */
export const ssoRouter = HttpRouter.empty
  .pipe(
    HttpRouter.get(ssoPaths.metadata, builtinOnly(metadataEndpoint)),
    HttpRouter.get(ssoPaths.openidMetadata, builtinOnly(metadataEndpoint)),
    HttpRouter.get(ssoPaths.signIn, builtinOnly(signInEndpoint)),
    HttpRouter.get(ssoPaths.authorize, builtinOnly(authorizeEndpoint)),
    HttpRouter.post(ssoPaths.token, builtinOnly(tokenEndpoint)),
    HttpRouter.post(ssoPaths.localLogin, builtinOnly(localLoginEndpoint)),
    HttpRouter.post(ssoPaths.ldapLogin, builtinOnly(ldapLoginEndpoint)),
    HttpRouter.get(ssoPaths.upstreamLogin, builtinOnly(upstreamStartEndpoint)),
    HttpRouter.get(ssoPaths.callback, builtinOnly(upstreamCallbackEndpoint)),
    HttpRouter.get(ssoPaths.connectionTest, builtinOnly(connectionTestStartEndpoint)),
    HttpRouter.put(ssoPaths.directory, builtinOnly(directoryEndpoint)),
    HttpRouter.post(ssoPaths.mfa, builtinOnly(mfaEndpoint)),
    HttpRouter.post(ssoPaths.enroll, builtinOnly(enrollEndpoint)),
    HttpRouter.get(ssoPaths.enrolment, builtinOnly(enrolmentFormEndpoint)),
    HttpRouter.post(ssoPaths.enrolment, builtinOnly(enrolEndpoint)),
    HttpRouter.post(ssoPaths.consent, builtinOnly(consentEndpoint)),
    HttpRouter.get(ssoPaths.grants, builtinOnly(grantsEndpoint)),
    HttpRouter.post(ssoPaths.revokeGrant, builtinOnly(revokeGrantEndpoint))
  )
  .pipe(
    // The write-approval review pages (docs/approvals.md, "Review page").
    HttpRouter.get(ssoPaths.approvals, builtinOnly(listEndpoint)),
    HttpRouter.get(ssoPaths.approval, builtinOnly(detailEndpoint)),
    HttpRouter.post(ssoPaths.approve, builtinOnly(approveEndpoint)),
    HttpRouter.post(ssoPaths.reject, builtinOnly(rejectEndpoint)),
    HttpRouter.post(ssoPaths.revoke, builtinOnly(revokeEndpoint)),
    HttpRouter.get(ssoPaths.stepUp, builtinOnly(stepUpEndpoint))
  )
  .pipe(
    otherMethods(ssoPaths.metadata, ["GET"]),
    otherMethods(ssoPaths.openidMetadata, ["GET"]),
    otherMethods(ssoPaths.signIn, ["GET"]),
    otherMethods(ssoPaths.authorize, ["GET"]),
    otherMethods(ssoPaths.token, ["POST"]),
    otherMethods(ssoPaths.localLogin, ["POST"]),
    otherMethods(ssoPaths.ldapLogin, ["POST"]),
    otherMethods(ssoPaths.upstreamLogin, ["GET"]),
    otherMethods(ssoPaths.callback, ["GET"]),
    otherMethods(ssoPaths.connectionTest, ["GET"]),
    otherMethods(ssoPaths.directory, ["PUT"]),
    otherMethods(ssoPaths.mfa, ["POST"]),
    otherMethods(ssoPaths.enroll, ["POST"]),
    otherMethods(ssoPaths.enrolment, ["GET", "POST"]),
    otherMethods(ssoPaths.consent, ["POST"]),
    otherMethods(ssoPaths.grants, ["GET"]),
    otherMethods(ssoPaths.revokeGrant, ["POST"])
  )
  .pipe(
    otherMethods(ssoPaths.approvals, ["GET"]),
    otherMethods(ssoPaths.approval, ["GET"]),
    otherMethods(ssoPaths.approve, ["POST"]),
    otherMethods(ssoPaths.reject, ["POST"]),
    otherMethods(ssoPaths.revoke, ["POST"]),
    otherMethods(ssoPaths.stepUp, ["GET"])
  )
