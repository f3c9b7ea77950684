import { existsSync } from "node:fs"
import { Command, Options } from "@effect/cli"
import { Effect, Layer } from "effect"
import { DevSessionGuard } from "../auth/dev-session.js"
import { loadConfig } from "../config/load.js"
import { CONFIG_KEY_HOW_TO, ConfigKeyError, loadDevConfigKey, parseConfigKey } from "../crypto/config-key.js"
import { ensureDevelopmentAccess } from "../demo/dev-access.js"
import { baseLayer } from "../runtime/base.js"
import type { ExtraRoutes } from "../runtime/build-generation.js"
import { loggerLayer } from "../runtime/logger.js"
import { supervise } from "../runtime/supervisor.js"

/** Where `npm start`'s development default keeps its generated configuration key. */
export const devKeyFile = "data/dev-config.key"

export interface ServeInput {
  readonly configFile: string
  readonly env: Readonly<Record<string, string | undefined>>
  readonly dev: boolean
  readonly extraRoutes?: ExtraRoutes
}

/**
 * `GATEWAY_CONFIG_KEY` is required, except under `--dev` (npm start), which creates or reuses a
 * development key file and says so loudly.
 */
export const resolveConfigKey = (env: ServeInput["env"], dev: boolean) =>
  Effect.gen(function* () {
    const text = env["GATEWAY_CONFIG_KEY"]
    // Most likely the database of `npm start`, which a new key would not open: say which key it has.
    if (text === undefined && !dev && existsSync(devKeyFile)) {
      return yield* new ConfigKeyError({
        message:
          `GATEWAY_CONFIG_KEY is not set, and ${devKeyFile} is here: a database \`npm start\` created opens only ` +
          `with that key, as \`--dev\` uses it (\`gateway serve --dev\`; development only). For production, set ` +
          `GATEWAY_CONFIG_KEY to a new key on a new database (docs/secrets.md). ${CONFIG_KEY_HOW_TO}`
      })
    }
    if (text !== undefined || !dev) return yield* parseConfigKey(text)
    const { key, created } = yield* loadDevConfigKey(devKeyFile)
    process.stderr.write(
      `\n  WARNING: GATEWAY_CONFIG_KEY is unset; ${created ? "created" : "using"} the DEVELOPMENT key ${devKeyFile}.\n` +
        "  Secrets in this database are only as safe as that file. Never use --dev in production:\n" +
        "  set GATEWAY_CONFIG_KEY (docs/secrets.md) and start with `gateway serve --config <file>`.\n\n"
    )
    return key
  })

export const runServe = (input: ServeInput) =>
  Effect.gen(function* () {
    const loaded = yield* loadConfig(input.configFile, input.env)
    const key = yield* resolveConfigKey(input.env, input.dev)
    yield* supervise({
      configFile: input.configFile,
      env: input.env,
      loaded,
      // --dev also accepts `gateway dev-token` tokens (docs/mcp.md) and sets up the demo's access
      // (docs/access-policy.md, "The development setup"); production does neither.
      base: input.dev
        ? DevSessionGuard.pipe(Layer.provideMerge(baseLayer(loaded.config, key, { serving: true })))
        : baseLayer(loaded.config, key, { serving: true }),
      ...(input.dev ? { prepare: Effect.asVoid(ensureDevelopmentAccess(loaded.config)) } : {}),
      ...(input.extraRoutes === undefined ? {} : { extraRoutes: input.extraRoutes })
    }).pipe(Effect.provide(loggerLayer(loaded.config.log_level)))
  })

export const serveCommand = (extraRoutes?: ExtraRoutes) =>
  Command.make(
    "serve",
    {
      config: Options.text("config").pipe(Options.withDescription("Path of the YAML configuration file")),
      dev: Options.boolean("dev").pipe(
        Options.withDescription(`Development only: without GATEWAY_CONFIG_KEY, create or reuse ${devKeyFile}`)
      )
    },
    ({ config, dev }) =>
      runServe({
        configFile: config,
        env: process.env,
        dev,
        ...(extraRoutes === undefined ? {} : { extraRoutes })
      })
  ).pipe(Command.withDescription("Run the gateway"))
