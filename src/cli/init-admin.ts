import type { Readable } from "node:stream"
import { Command, Options } from "@effect/cli"
import { Console, Effect, Layer, Redacted } from "effect"
import { authRepositories } from "../auth/layer.js"
import { loadConfig } from "../config/load.js"
import { ConfigKey } from "../crypto/config-key.js"
import { Sealer } from "../crypto/sealer.js"
import { ensureDevelopmentAccess } from "../demo/dev-access.js"
import { ADMIN_USERNAME, AdminInitError, initAdmin } from "../identity/local/admin.js"
import { baseLayer, policyRepositories } from "../runtime/base.js"
import { StoreLive } from "../store/live.js"
import { resolveConfigKey } from "./serve.js"
import { configOption } from "./validate.js"

const MAX_STDIN_BYTES = 4096

/**
 * The whole of `input`, without one trailing line break (what `echo` and `printf '%s\n'` add). A
 * terminal is refused: it would echo the password as it is typed, so `--password-stdin` is for pipes.
 */
export const readPasswordFrom = (input: Readable & { readonly isTTY?: boolean }) =>
  Effect.async<string, AdminInitError>((resume) => {
    const fail = (message: string) => resume(Effect.fail(new AdminInitError({ message })))
    if (input.isTTY === true) {
      fail(
        "--password-stdin reads a pipe, not a terminal (it would show the password): printf '%s\\n' \"$PASSWORD\" | gateway init-admin --password-stdin"
      )
      return
    }
    const chunks: Array<Buffer> = []
    let size = 0
    input.on("data", (chunk: Buffer) => {
      size += chunk.length
      if (size > MAX_STDIN_BYTES) {
        input.destroy()
        fail("standard input is too long for a password")
      } else chunks.push(chunk)
    })
    input.on("end", () =>
      resume(
        Effect.succeed(
          Buffer.concat(chunks)
            .toString("utf8")
            .replace(/\r?\n$/, "")
        )
      )
    )
    input.on("error", (error: Error) => fail(`cannot read standard input: ${error.message}`))
  })

const options = {
  config: configOption,
  reset: Options.boolean("reset").pipe(
    Options.withDescription("Recover the existing administrator: new password, account enabled, sessions revoked")
  ),
  resetMfa: Options.boolean("reset-mfa").pipe(
    Options.withDescription("Clear the administrator's second factor; the next sign-in enrolls a new one")
  ),
  passwordStdin: Options.boolean("password-stdin").pipe(
    Options.withDescription("Read the new password from standard input instead of generating one")
  ),
  dev: Options.boolean("dev").pipe(Options.withDescription("Development only: use the key file of `serve --dev`"))
}

/**
 * `gateway init-admin` (docs/authorization-server.md): creates the built-in local administrator, or recovers it
 * with `--reset` / `--reset-mfa`, using the same configuration key and database as `serve`. A generated
 * password is printed once; only its scrypt hash is stored.
 */
export const initAdminCommand = Command.make("init-admin", options, ({ config, reset, resetMfa, passwordStdin, dev }) =>
  Effect.gen(function* () {
    const loaded = yield* loadConfig(config, process.env)
    const key = yield* resolveConfigKey(process.env, dev)
    const resetPassword = reset || !resetMfa
    if (passwordStdin && !resetPassword) {
      return yield* new AdminInitError({ message: "--password-stdin needs --reset (or no flag, to create)" })
    }
    const password = passwordStdin ? Redacted.make(yield* readPasswordFrom(process.stdin)) : undefined
    const sealer = Sealer.Default.pipe(Layer.provideMerge(ConfigKey.layer(key)))
    const layer = Layer.mergeAll(authRepositories, policyRepositories).pipe(
      Layer.provideMerge(StoreLive(loaded.config.storage)),
      Layer.provide(sealer)
    )
    const result = yield* initAdmin({ reset: reset || resetMfa, resetPassword, resetMfa, password }).pipe(
      Effect.provide(layer)
    )
    // The development setup gives the new administrator the demo's tools (docs/access-policy.md).
    if (dev) yield* Effect.scoped(Effect.provide(ensureDevelopmentAccess(loaded.config), baseLayer(loaded.config, key)))
    const lines = [
      result.created
        ? `Created the built-in administrator "${ADMIN_USERNAME}".`
        : `Recovered the built-in administrator "${ADMIN_USERNAME}": account enabled, ${result.revokedSessions} session(s) revoked.`,
      ...(resetMfa ? ["Its second factor was cleared: the next sign-in sets up a new authenticator."] : []),
      ...(result.generatedPassword === undefined
        ? resetPassword
          ? ["The password was set from standard input."]
          : []
        : [`Password (shown once, store it now): ${Redacted.value(result.generatedPassword)}`]),
      ...(result.created ? [`Sign in at ${loaded.config.auth.issuer}; the first sign-in sets up TOTP.`] : [])
    ]
    yield* Console.log(lines.join("\n"))
  })
).pipe(Command.withDescription("Create or recover the built-in local administrator"))
