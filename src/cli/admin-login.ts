import { Command, Options } from "@effect/cli"
import { Console, Effect } from "effect"
import { loadConfig } from "../config/load.js"
import { adminSignIn, DEFAULT_ADMIN_CLIENT } from "./admin/sign-in.js"
import { configOption } from "./validate.js"

/** `--client`: the loopback client an administrator's command signs in with. */
export const adminClientOption = Options.text("client").pipe(
  Options.withDefault(DEFAULT_ADMIN_CLIENT),
  Options.withDescription("The auth.sso.clients entry to sign in with (a loopback redirect, the admin resource)")
)

/**
 * `gateway admin-login` (docs/management-api.md, "Authentication"): signs an administrator in through
 * the browser with a registered loopback client of its own, whose resource is the admin listener, and
 * prints a Management API access token on standard output, so `TOKEN=$(gateway admin-login)` works. The address to open goes to standard error.
 */
export const adminLoginCommand = Command.make(
  "admin-login",
  { config: configOption, client: adminClientOption },
  ({ config: file, client: clientId }) =>
    Effect.gen(function* () {
      const { config } = yield* loadConfig(file, process.env)
      const tokens = yield* adminSignIn(config, clientId)
      yield* Console.log(tokens.access_token)
    })
).pipe(Command.withDescription("Sign in through the browser and print a Management API access token"))
