import { HttpApiMiddleware, HttpApiSecurity } from "@effect/platform"
import { Context, Schema } from "effect"
import type { Caller } from "../bearer/caller.js"
import type { UserRow } from "../store/users.js"
import { Forbidden, Unauthorized } from "./errors.js"

/** The administrator making a Management API request, from their verified token. */
export class AdminCaller extends Context.Tag("gateway/AdminCaller")<
  AdminCaller,
  { readonly caller: Caller; readonly userId: string; readonly kind: UserRow["kind"] }
>() {}

/**
 * Every Management API request needs a gateway-issued access token for the admin resource whose user
 * holds the administrative scope now (docs/management-api.md, "Authentication").
 */
export class AdminAuth extends HttpApiMiddleware.Tag<AdminAuth>()("AdminAuth", {
  failure: Schema.Union(Unauthorized, Forbidden),
  provides: AdminCaller,
  security: { bearer: HttpApiSecurity.bearer }
}) {}
