import { randomBytes } from "node:crypto"
import { Command, Options } from "@effect/cli"
import { Console, Context, Effect, Layer, Option } from "effect"
import { devSessionPrefix } from "../auth/dev-session.js"
import { loadConfig } from "../config/load.js"
import { Signer } from "../crypto/signer.js"
import { ensureDevelopmentAccess } from "../demo/dev-access.js"
import { baseLayer } from "../runtime/base.js"
import { resolveConfigKey } from "./serve.js"
import { DEFAULT_CONFIG_PATH } from "./validate.js"

/**
 * `gateway dev-token` — DEVELOPMENT ONLY (docs/mcp.md, "Trying it"). Prints a 10-minute access token for
 * /mcp signed with the gateway's key. Only a gateway started with `--dev` (npm start) accepts it; any
 * other gateway refuses it because no stored session backs it.
 */
export const devTokenCommand = Command.make(
  "dev-token",
  {
    config: Options.file("config").pipe(Options.withDefault(DEFAULT_CONFIG_PATH)),
    scope: Options.text("scope").pipe(
      Options.repeated,
      Options.withDescription("A scope to grant (repeatable); default: every backend's required scopes")
    ),
    subject: Options.text("subject").pipe(
      Options.optional,
      Options.withDescription("The token's subject (a user id); default: the development setup's `developer`")
    )
  },
  ({ config: file, scope, subject }) =>
    Effect.gen(function* () {
      const loaded = yield* loadConfig(file, process.env)
      const { config } = loaded
      if (config.auth.mode !== "builtin") return yield* Effect.fail(new Error("dev-token needs auth.mode builtin"))
      const key = yield* resolveConfigKey(process.env, true)
      const scopes =
        scope.length > 0 ? scope : [...new Set(config.backends.flatMap((backend) => backend.required_scopes))]
      const token = yield* Effect.scoped(
        Effect.gen(function* () {
          const base = yield* Layer.build(baseLayer(config, key))
          const signer = Context.get(base, Signer)
          // The developer's access comes from the development setup's permission group.
          const developer = yield* Effect.provide(ensureDevelopmentAccess(config), base)
          return yield* signer.sign(
            {
              scope: scopes.join(" "),
              client_id: "gateway-dev-token",
              sid: `${devSessionPrefix}${randomBytes(9).toString("base64url")}`
            },
            {
              issuer: config.auth.issuer,
              audience: config.server.public_url,
              subject: Option.getOrElse(subject, () => developer),
              expiresInSeconds: 600
            }
          )
        })
      )
      yield* Console.log(token)
    })
).pipe(Command.withDescription("DEVELOPMENT ONLY: print a 10-minute /mcp token accepted by `serve --dev`"))
