import { Redacted } from "effect"
import type { Env } from "./expand.js"
import { problem } from "./problem.js"
import type { ConfigProblem, ResolvedSecrets } from "./service.js"

/**
 * `auth.sso.upstream.client_secret_env` and `auth.sso.directory_token_env` hold variable NAMES
 * (docs/configuration.md), so the secrets themselves never sit in the YAML. Resolved from the
 * raw document so a missing variable is reported even when other parts of the file are invalid.
 */

const field = (value: unknown, key: string): unknown =>
  typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)[key]
    : undefined

interface Resolved {
  readonly secret: Redacted.Redacted<string> | undefined
  readonly problems: ReadonlyArray<ConfigProblem>
}

const byName = (name: unknown, path: string, env: Env): Resolved => {
  // A non-string name is a schema problem, reported by the decoder.
  if (typeof name !== "string" || name === "") return { secret: undefined, problems: [] }
  const value = env[name]
  const hint = name.includes("${") ? " (this key holds a variable NAME; values under auth.sso are not expanded)" : ""
  if (value === undefined)
    return { secret: undefined, problems: [problem(path, `environment variable ${name} is not set${hint}`)] }
  if (value === "") return { secret: undefined, problems: [problem(path, `environment variable ${name} is empty`)] }
  return { secret: Redacted.make(value), problems: [] }
}

export const resolveSecrets = (
  raw: unknown,
  env: Env
): { readonly secrets: ResolvedSecrets; readonly problems: ReadonlyArray<ConfigProblem> } => {
  const sso = field(field(raw, "auth"), "sso")
  const upstream = byName(
    field(field(sso, "upstream"), "client_secret_env"),
    "auth.sso.upstream.client_secret_env",
    env
  )
  const directory = byName(field(sso, "directory_token_env"), "auth.sso.directory_token_env", env)
  const configKey = env["GATEWAY_CONFIG_KEY"]
  return {
    secrets: {
      upstreamClientSecret: upstream.secret,
      directoryToken: directory.secret,
      ...(configKey === undefined || configKey === "" ? {} : { configKey: Redacted.make(configKey) })
    },
    problems: [...upstream.problems, ...directory.problems]
  }
}
