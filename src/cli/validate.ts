// Exit code: an invalid file fails with ConfigInvalid, which the main (run.ts exitCodeOf) maps to 2 and prints.
import { Command, Options } from "@effect/cli"
import { Console, Effect } from "effect"
import { loadConfig } from "../config/load.js"

/**
 * `gateway validate [--config <path>]` (docs/configuration.md, "Validating a file"): load, expand and check
 * the file, build nothing. Valid: prints `<file>: OK`. Invalid: the ConfigInvalid message is one
 * `<file>:<line>: <path>: <message>` line per problem.
 */

export const DEFAULT_CONFIG_PATH = "config/gateway.yaml"

/** `--config`, as every command but `serve` (which names its file explicitly) takes it. */
export const configOption = Options.file("config").pipe(
  Options.withDescription(`Path of the YAML configuration file (default: ${DEFAULT_CONFIG_PATH})`),
  Options.withDefault(DEFAULT_CONFIG_PATH)
)

export const validateCommand = Command.make("validate", { config: configOption }, ({ config }) =>
  // The process edge: the only place the environment is read.
  loadConfig(config, process.env).pipe(Effect.zipRight(Console.log(`${config}: OK`)))
).pipe(Command.withDescription("Validate the configuration file (exit 0 valid, 2 invalid)"))
