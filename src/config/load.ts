import { open } from "node:fs/promises"
import { Effect, Either } from "effect"
import { decodeConfig } from "./decode.js"
import { type Env, expandEnv } from "./expand.js"
import { parsePath } from "./path.js"
import { problem } from "./problem.js"
import { checkRules } from "./rules.js"
import { resolveSecrets } from "./secrets.js"
import { ConfigInvalid, type ConfigProblem, type LoadedConfig } from "./service.js"
import { parseYaml } from "./yaml-source.js"

/**
 * File → YAML → `${VAR}` expansion → schema → cross-field rules: the file is fully loaded, expanded
 * and validated before anything is built (docs/configuration.md). Every stage reports all it finds; the
 * only early exits are the ones that leave nothing to check (unreadable file, broken YAML).
 */

/** Real configurations are a few KiB; the cap keeps a wrong path (a log, a dump) from eating memory. */
export const MAX_CONFIG_BYTES = 1024 * 1024

const osReason = (error: unknown): string => {
  if (!(error instanceof Error)) return String(error)
  const code = "code" in error && typeof error.code === "string" ? error.code : undefined
  // Node writes "ENOENT: no such file or directory, open '/x'": keep the human part and the code.
  const human = /^[A-Z0-9_]+: (.*?)(?:, [a-z]+(?: '.*')?)?$/s.exec(error.message)?.[1] ?? error.message
  return code === undefined ? human : `${human} (${code})`
}

const readCapped = async (file: string): Promise<Uint8Array> => {
  const handle = await open(file, "r")
  try {
    const buffer = new Uint8Array(MAX_CONFIG_BYTES + 1)
    let total = 0
    while (total < buffer.length) {
      const { bytesRead } = await handle.read(buffer, total, buffer.length - total, null)
      if (bytesRead === 0) break
      total += bytesRead
    }
    return buffer.subarray(0, total)
  } finally {
    await handle.close()
  }
}

const readConfigText = (file: string): Effect.Effect<string, ConfigInvalid> =>
  Effect.tryPromise({
    try: () => readCapped(file),
    catch: (error) =>
      new ConfigInvalid({ file, problems: [problem("", `cannot read the configuration file: ${osReason(error)}`)] })
  }).pipe(
    Effect.flatMap((bytes) => {
      if (bytes.length > MAX_CONFIG_BYTES) {
        return Effect.fail(
          new ConfigInvalid({ file, problems: [problem("", "the configuration file is larger than 1 MiB")] })
        )
      }
      return Effect.try({
        try: () => new TextDecoder("utf-8", { fatal: true }).decode(bytes),
        catch: () => new ConfigInvalid({ file, problems: [problem("", "the configuration file is not valid UTF-8")] })
      })
    })
  )

const byLine = (a: ConfigProblem, b: ConfigProblem) =>
  (a.line ?? Number.MAX_SAFE_INTEGER) - (b.line ?? Number.MAX_SAFE_INTEGER)

/** The pure part of `loadConfig`, for text that is already in memory. */
export const parseConfig = (file: string, text: string, env: Env): Either.Either<LoadedConfig, ConfigInvalid> => {
  const parsed = parseYaml(text)
  if (parsed._tag === "Rejected") return Either.left(new ConfigInvalid({ file, problems: parsed.problems }))
  const { value, lineOf } = parsed.source
  const expanded = expandEnv(value, env)
  const resolved = resolveSecrets(value, env)
  const decoded = decodeConfig(expanded.value, expanded.fromEnv)
  const sections = decoded._tag === "Valid" ? decoded.config : decoded.sections
  // A value whose expansion failed would also fail the schema; one problem per path is enough.
  const unexpanded = new Set(expanded.problems.map((each) => each.path))
  const later = [...(decoded._tag === "Invalid" ? decoded.problems : []), ...checkRules(sections, resolved.secrets)]
  const problems = [...expanded.problems, ...resolved.problems, ...later.filter((each) => !unexpanded.has(each.path))]
    .map((each) => (each.line === undefined ? { ...each, line: lineOf(parsePath(each.path)) } : each))
    .sort(byLine)
  if (decoded._tag === "Invalid" || problems.length > 0) return Either.left(new ConfigInvalid({ file, problems }))
  return Either.right({ file, config: decoded.config, secrets: resolved.secrets })
}

/** Loads and validates a configuration file; `env` is passed in because nothing else reads `process.env`. */
export const loadConfig: (file: string, env: Env) => Effect.Effect<LoadedConfig, ConfigInvalid> = Effect.fn(
  "Config.load"
)(function* (file: string, env: Env) {
  const text = yield* readConfigText(file)
  return yield* parseConfig(file, text, env)
})
