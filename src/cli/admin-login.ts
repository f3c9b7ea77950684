import { Command, Options } from "@effect/cli"
import { Console, Effect } from "effect"
import { adminResource } from "../admin/resource.js"
import { loadConfig } from "../config/load.js"
import { LoginFailed, loopbackLogin } from "./loopback-login.js"
import { configOption } from "./validate.js"

/**
 * `gateway admin-login` (docs/management-api.md, "Authentication"): signs an administrator in through
 * the browser with a registered loopback client of its own, whose resource is the admin listener, and
 * prints a Management API access token on standard output, so `TOKEN=$(gateway admin-login)` works. The address to open goes to standard error.
 */
export const adminLoginCommand = Command.make(
  "admin-login",
  {
    config: configOption,
    client: Options.text("client").pipe(
      Options.withDefault("gateway-admin"),
      Options.withDescription("The auth.sso.clients entry to sign in with (a loopback redirect, the admin resource)")
    )
  },
  ({ config: file, client: clientId }) =>
    Effect.gen(function* () {
      const { config } = yield* loadConfig(file, process.env)
      if (config.auth.mode !== "builtin") {
        return yield* new LoginFailed({
          message: "admin-login signs in at the built-in authorization server (auth.mode builtin)"
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
      yield* Console.log(tokens.access_token)
    })
).pipe(Command.withDescription("Sign in through the browser and print a Management API access token"))
