import { readdir, readFile } from "node:fs/promises"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { loadConfig } from "../../src/config/load.js"
import { signingKey64 } from "../fixtures/config/base.js"

// Every file shipped under config/ must validate (README, docs/configuration.md), given the variables it names.

const configDir = join(import.meta.dirname, "../../config")

const yamlFiles = async (dir: string): Promise<ReadonlyArray<string>> => {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true })
  return entries
    .filter((entry) => entry.isFile() && /\.ya?ml$/.test(entry.name))
    .map((entry) => join(entry.parentPath, entry.name))
    .sort()
}

/** Plausible fake values for the variables a file names, by `${NAME}` or by a `*_env:` key. */
const fakeEnv = (text: string): Record<string, string> => {
  const names = new Set([
    ...[...text.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g)].map((match) => match[1]),
    ...[...text.matchAll(/_env:\s*([A-Za-z_][A-Za-z0-9_]*)/g)].map((match) => match[1])
  ])
  const env: Record<string, string> = {}
  for (const name of names) {
    if (name === undefined) continue
    if (name.endsWith("SIGNING_KEY")) env[name] = signingKey64
    else if (name === "DATABASE_URL") env[name] = "postgres://gateway:pw@127.0.0.1:5432/gateway"
    else env[name] = `fake-${name.toLowerCase()}-`.padEnd(40, "x")
  }
  return env
}

describe("shipped configuration files", () => {
  it.effect("config/ holds the default and the OIDC, LDAP and PostgreSQL examples", () =>
    Effect.gen(function* () {
      const files = yield* Effect.promise(() => yamlFiles(configDir))
      expect(files.map((file) => file.slice(configDir.length + 1))).toEqual(
        expect.arrayContaining(["examples/ldap.yaml", "examples/oidc.yaml", "examples/postgres.yaml", "gateway.yaml"])
      )
    })
  )

  it.effect("every file validates", () =>
    Effect.gen(function* () {
      for (const file of yield* Effect.promise(() => yamlFiles(configDir))) {
        const text = yield* Effect.promise(() => readFile(file, "utf8"))
        const result = yield* Effect.either(loadConfig(file, fakeEnv(text)))
        expect(result._tag === "Left" ? result.left.message : "OK", file).toBe("OK")
      }
    })
  )

  it.effect("the default runs on loopback with SQLite and the optional demo backend (npm start)", () =>
    Effect.gen(function* () {
      const { config } = yield* loadConfig(join(configDir, "gateway.yaml"), {})
      expect(config.server).toEqual({
        listen: "127.0.0.1:8080",
        public_url: "http://127.0.0.1:8080/mcp",
        trusted_proxies: [],
        max_connections: 8192,
        max_answer_bytes_in_flight: 64 * 1024 * 1024
      })
      expect(config.auth.issuer).toBe("http://127.0.0.1:8080/sso")
      expect(config.storage).toEqual({ type: "sqlite", path: "./data/gateway.db" })
      expect([config.admin.mode, config.admin.listen]).toEqual(["local", "127.0.0.1:8081"])
      expect(config.backends.map((b) => [b.id, b.url, b.allow_insecure_http, b.required])).toEqual([
        ["demo", "http://127.0.0.1:8090/mcp", true, false]
      ])
      expect(config.backends[0]?.tool_rules.map((rule) => [rule.tools, rule.publish, rule.write])).toEqual([
        [["*"], true, false],
        [["create_note", "delete_note"], true, true]
      ])
    })
  )
})
