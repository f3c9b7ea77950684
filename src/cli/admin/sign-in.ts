import { Effect } from "effect"
import { adminResource } from "../../admin/resource.js"
import type { GatewayConfig } from "../../config/schema.js"
import { LoginFailed, loopbackLogin } from "../loopback-login.js"

/** The `auth.sso.clients` entry the administrator's commands sign in with, unless `--client` names another. */
export const DEFAULT_ADMIN_CLIENT = "gateway-admin"

/**
 * An administrator signs in through the browser with a registered loopback client whose resource is
 * the admin listener (docs/management-api.md, "Getting a token"): the address to open goes to standard
 * error, and the Management API's tokens come back — never printed here. Used by `gateway admin-login`
 * and by every `gateway admin …` command without `GATEWAY_ADMIN_TOKEN`.
 */
export const adminSignIn = (config: GatewayConfig, clientId: string) =>
  Effect.gen(function* () {
    if (config.auth.mode !== "builtin") {
      return yield* new LoginFailed({
        message: "an administrator signs in at the built-in authorization server (auth.mode builtin)"
      })
    }
    const client = config.auth.sso.clients.find((each) => each.id === clientId)
    const resource = adminResource(config)
    if (client === undefined || !client.resources.includes(resource)) {
      return yield* new LoginFailed({
        message: `register a client "${clientId}" in auth.sso.clients with a loopback redirect (http://127.0.0.1/callback) and resources: [${resource}]`
      })
    }
    const tokens = yield* loopbackLogin({
      issuer: config.auth.issuer,
      client,
      resource,
      scope: config.admin.required_scopes.join(" "),
      onAuthorizationUrl: (url) =>
        process.stderr.write(`Open this address in your browser and sign in as an administrator:\n\n  ${url}\n\n`)
    })
    process.stderr.write(`Signed in; the token is valid for ${tokens.expires_in} seconds.\n`)
    return tokens
  })
