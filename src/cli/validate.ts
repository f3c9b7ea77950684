// Exit code: an invalid file fails with ConfigInvalid, which the main (run.ts exitCodeOf) maps to 2 and prints.
import { Command, Options } from "@effect/cli"
import { Console, Effect } from "effect"
import { loadConfig } from "../config/load.js"
import { type ManagedState, probeManagedState } from "../sources/initialized-probe.js"

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

/**
 * Once managed storage is initialized the database supplies backends and the file's `backends[]` are
 * ignored (docs/tool-sources.md): said here, so an edit to them is not silently without effect.
 */
export const managedNote = (backends: number, state: ManagedState): string | undefined => {
  if (backends === 0) return undefined
  if (state === "initialized") {
    return `note: managed storage is initialized: the database supplies backends; the ${backends} entries of backends[] in this file are ignored (manage them with the Management API)`
  }
  if (state === "not_initialized") return undefined
  return `note: cannot tell whether managed storage is initialized (${state.unknown}); if it is, backends[] in this file are ignored`
}

export const validateCommand = Command.make("validate", { config: configOption }, ({ config }) =>
  // The process edge: the only place the environment is read.
  Effect.gen(function* () {
    const loaded = yield* loadConfig(config, process.env)
    yield* Console.log(`${config}: OK`)
    const backends = loaded.config.backends.length
    if (backends === 0) return
    const note = managedNote(backends, yield* probeManagedState(loaded.config))
    if (note !== undefined) yield* Console.log(note)
  })
).pipe(Command.withDescription("Validate the configuration file (exit 0 valid, 2 invalid)"))
