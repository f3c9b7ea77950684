import { randomBytes } from "node:crypto"
import { existsSync } from "node:fs"
import { Command, Options } from "@effect/cli"
import { Console, Context, Effect, Layer, Option } from "effect"
import { devSessionPrefix } from "../bearer/caller.js"
import { loadConfig } from "../config/load.js"
import { readDevConfigKey } from "../crypto/config-key.js"
import { Signer } from "../crypto/signer.js"
import { DEVELOPER_USERNAME } from "../demo/dev-access.js"
import { baseLayer } from "../runtime/base.js"
import { UserRepo } from "../store/users.js"
import { devKeyFile } from "./serve.js"
import { configOption } from "./validate.js"

/**
 * `gateway dev-token` — DEVELOPMENT ONLY (docs/mcp.md, "Trying it"). Prints a 10-minute access token for
 * /mcp signed with the development key. It runs only against a development setup — the rule of
 * `serve --dev`: GATEWAY_CONFIG_KEY unset and the development key file present (made by `serve --dev`) —
 * so it never signs with a production key and never writes to a store; the developer it signs for must
 * already exist (the development setup creates it). Only a gateway started with `--dev` accepts the
 * token; any other refuses it, saying so.
 */
const notDevelopment = (why: string) =>
  new Error(
    `dev-token runs only against a development setup (${why}); development tokens are accepted only by a ` +
      "gateway started with --dev. Start it with `npm start` (gateway serve --dev) first, without GATEWAY_CONFIG_KEY."
  )

export const devTokenCommand = Command.make(
  "dev-token",
  {
    config: configOption,
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
      if (process.env["GATEWAY_CONFIG_KEY"] !== undefined)
        return yield* Effect.fail(notDevelopment("GATEWAY_CONFIG_KEY is set"))
      if (!existsSync(devKeyFile))
        return yield* Effect.fail(notDevelopment(`there is no development key ${devKeyFile} here`))
      const key = yield* readDevConfigKey(devKeyFile)
      const scopes =
        scope.length > 0 ? scope : [...new Set(config.backends.flatMap((backend) => backend.required_scopes))]
      const token = yield* Effect.scoped(
        Effect.gen(function* () {
          const base = yield* Layer.build(baseLayer(config, key))
          const signer = Context.get(base, Signer)
          // The developer and its access come from the development setup (`serve --dev`); nothing is written here.
          const found = yield* Effect.provide(
            Effect.flatMap(UserRepo, (users) => users.findLocalByUsername(DEVELOPER_USERNAME)),
            base
          ).pipe(Effect.orDie)
          if (Option.isNone(found) && Option.isNone(subject))
            return yield* Effect.fail(notDevelopment(`the store has no user "${DEVELOPER_USERNAME}"`))
          // A subject nobody is would be served like anyone without a group (an empty tools/list), with
          // nothing to say why: refused here instead, naming what --subject takes.
          if (Option.isSome(subject)) {
            const user = yield* Effect.provide(
              Effect.flatMap(UserRepo, (users) => users.findById(subject.value)),
              base
            ).pipe(Effect.orDie)
            if (Option.isNone(user)) {
              return yield* Effect.fail(
                new Error(
                  `--subject ${JSON.stringify(subject.value.slice(0, 100))}: no user has that id in this store. ` +
                    "It takes a user's id (GET /api/v1/identities lists them, field `id`), not a user name."
                )
              )
            }
          }
          const developer = Option.match(found, { onNone: () => "", onSome: (user) => user.id })
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
