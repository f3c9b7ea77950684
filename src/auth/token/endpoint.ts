import { HttpServerRequest } from "@effect/platform"
import { Effect } from "effect"
import { authSettings } from "../settings.js"
import { exchangeCode } from "./authorization-code.js"
import { requiredParam, tokenError } from "./errors.js"
import { readForm } from "./form.js"
import { tokenResponse } from "./mint.js"
import { refreshTokens } from "./refresh.js"

/**
 * `POST /sso/token`. Clients are public (`token_endpoint_auth_methods_supported: ["none"]`): they name
 * themselves with `client_id` and prove possession with PKCE; a client secret in any form is refused.
 */
export const tokenEndpoint = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const settings = yield* authSettings
  const params = yield* readForm
  if (request.headers["authorization"] !== undefined || params.has("client_secret")) {
    return yield* tokenError("invalid_client", "Clients of this server are public: send client_id, no secret.", 401)
  }
  const clientId = yield* requiredParam(params, "client_id")
  const client = settings.clients.find((candidate) => candidate.id === clientId)
  if (client === undefined) return yield* tokenError("invalid_client", "Unknown client_id.", 401)
  const grantType = yield* requiredParam(params, "grant_type")
  if (grantType === "authorization_code") return tokenResponse(yield* exchangeCode(params, client, settings))
  if (grantType === "refresh_token") return tokenResponse(yield* refreshTokens(params, client, settings))
  return yield* tokenError("unsupported_grant_type", "Supported grant types: authorization_code, refresh_token.")
}).pipe(Effect.withSpan("tokenEndpoint"))
