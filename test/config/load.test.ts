// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these strings are YAML text, where ${NAME} is meant literally
import { mkdtemp, rm, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Either, Redacted } from "effect"
import { loadConfig, MAX_CONFIG_BYTES, parseConfig } from "../../src/config/load.js"
import type { ConfigProblem } from "../../src/config/service.js"
import { yamlOf } from "../fixtures/config/base.js"

const problemsOf = (text: string, env: Record<string, string> = {}): ReadonlyArray<ConfigProblem> => {
  const result = parseConfig("test.yaml", text, env)
  if (Either.isRight(result)) throw new Error("expected the configuration to be rejected")
  return result.left.problems
}

const withTempDir = <A, E>(use: (dir: string) => Effect.Effect<A, E>) =>
  Effect.acquireUseRelease(
    Effect.promise(() => mkdtemp(join(tmpdir(), "gateway-config-"))),
    use,
    (dir) => Effect.promise(() => rm(dir, { recursive: true, force: true }))
  )

describe("loadConfig (docs/configuration.md)", () => {
  it.effect("loads a file and applies the documented defaults", () =>
    withTempDir((dir) =>
      Effect.gen(function* () {
        const file = join(dir, "gateway.yaml")
        yield* Effect.promise(() => writeFile(file, yamlOf()))
        const loaded = yield* loadConfig(file, {})
        expect(loaded.file).toBe(file)
        const { config } = loaded
        expect(Duration.toMillis(config.auth.enterprise_membership_max_age)).toBe(Duration.toMillis(Duration.hours(24)))
        expect(config.admin.approvals.policy_changes.enabled).toBe(false)
        expect(config.auth.mode).toBe("builtin")
        expect(config.storage).toEqual({ type: "sqlite", path: "./data/gateway.db" })
        expect(config.backends).toEqual([])
      })
    )
  )

  it("defaults an approval quorum to 1 (1 or 2 allowed)", () => {
    const text = yamlOf({
      backends: [
        { id: "a", url: "https://a.example.com/mcp", tool_rules: [{ tools: ["x"], write: true, approval: {} }] }
      ]
    })
    const result = parseConfig("test.yaml", text, {})
    expect(Either.getOrThrow(result).config.backends[0]?.tool_rules[0]?.approval?.required_approvals).toBe(1)
  })

  it("types durations, URLs and secrets", () => {
    const text = yamlOf({
      request_timeout: "500ms",
      drain_timeout: "1h30m",
      admin: { approvals: { notifications: { url: "https://hooks.example.com/x", secret: "s".repeat(32) } } }
    })
    const { config } = Either.getOrThrow(parseConfig("test.yaml", text, {}))
    expect(Duration.toMillis(config.request_timeout)).toBe(500)
    expect(Duration.toMillis(config.drain_timeout)).toBe(5_400_000)
    const secret = config.admin.approvals.notifications?.secret
    expect(secret !== undefined && Redacted.isRedacted(secret)).toBe(true)
  })
})

describe("loadConfig rejects bad input with every problem at once", () => {
  it.effect("an unreadable path names the path and the OS reason", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(loadConfig("/nonexistent/gateway.yaml", {}))
      expect(error.file).toBe("/nonexistent/gateway.yaml")
      expect(error.problems[0]?.message).toBe("cannot read the configuration file: no such file or directory (ENOENT)")
      expect(error.message).toContain("/nonexistent/gateway.yaml")
    })
  )

  it.effect("a directory is unreadable too", () =>
    withTempDir((dir) =>
      Effect.gen(function* () {
        const error = yield* Effect.flip(loadConfig(dir, {}))
        expect(error.problems[0]?.message).toContain("EISDIR")
      })
    )
  )

  it.effect("a file over 1 MiB is refused before parsing", () =>
    withTempDir((dir) =>
      Effect.gen(function* () {
        const file = join(dir, "big.yaml")
        yield* Effect.promise(() => writeFile(file, `# ${"x".repeat(MAX_CONFIG_BYTES)}\n`))
        const error = yield* Effect.flip(loadConfig(file, {}))
        expect(error.problems).toEqual([
          { path: "", line: undefined, message: "the configuration file is larger than 1 MiB" }
        ])
      })
    )
  )

  it.effect("bytes that are not UTF-8 are refused", () =>
    withTempDir((dir) =>
      Effect.gen(function* () {
        const file = join(dir, "latin1.yaml")
        yield* Effect.promise(() => writeFile(file, Buffer.from([0x61, 0x3a, 0x20, 0xe9, 0x0a])))
        const error = yield* Effect.flip(loadConfig(file, {}))
        expect(error.problems[0]?.message).toBe("the configuration file is not valid UTF-8")
      })
    )
  )

  it("an empty file, or one with only comments", () => {
    expect(problemsOf("")).toEqual([{ path: "", line: undefined, message: "the configuration file is empty" }])
    expect(problemsOf("# nothing here\n")[0]?.message).toBe("the configuration file is empty")
  })

  it("a YAML syntax error reports its line", () => {
    const [first] = problemsOf("server:\n  listen: 127.0.0.1:8080\n  public_url: [unclosed\nauth: {}\n")
    expect(first?.line).toBe(4)
    expect(first?.message).toMatch(/^YAML: /)
  })

  it("a duplicate key is rejected with the duplicate's line", () => {
    const problems = problemsOf("server:\n  listen: 127.0.0.1:8080\n  listen: 127.0.0.1:9090\n")
    expect(problems).toEqual([{ path: "", line: 3, message: 'duplicate key "listen" (keys must be unique)' }])
    const flow = problemsOf('auth: { "issuer": a, "issuer": b }\n')
    expect(flow[0]?.message).toBe('duplicate key "issuer" (keys must be unique)')
  })

  it("an alias bomb is stopped by the alias limit instead of expanding", () => {
    const rows = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for (const [name, previous] of [
      ["b", "a"],
      ["c", "b"],
      ["d", "c"],
      ["e", "d"],
      ["f", "e"]
    ]) {
      rows.push(`${name}: &${name} [${Array(10).fill(`*${previous}`).join(", ")}]`)
    }
    const problems = problemsOf(`${rows.join("\n")}\n`)
    expect(problems[0]?.message).toMatch(/^YAML aliases expand too much/)
  })

  it("server.max_answer_bytes_in_flight defaults to 64 MiB and must hold one answer of the per-call maximum (32 MiB)", () => {
    expect(Either.getOrThrow(parseConfig("test.yaml", yamlOf(), {})).config.server.max_answer_bytes_in_flight).toBe(
      64 * 1024 * 1024
    )
    const problems = problemsOf(yamlOf({ server: { max_answer_bytes_in_flight: 1_000_000 } }))
    expect(problems.map((problem) => problem.path)).toEqual(["server.max_answer_bytes_in_flight"])
    expect(problems[0]?.message).toContain("33554432")
  })

  it("unknown keys are reported by name, with their line", () => {
    const problems = problemsOf(
      "server:\n  public_url: https://gw.example.com/mcp\n  lisen: 0.0.0.0:8080\nauth:\n  issuer: https://gw.example.com/sso\n"
    )
    expect(problems).toContainEqual({ path: "server.lisen", line: 3, message: 'unknown key "lisen"' })
    expect(problems).toContainEqual({ path: "server.listen", line: 1, message: 'missing required key "listen"' })
  })

  it("downstream clients are public: a client_secret_env on one is an unknown key (auth.sso.clients[])", () => {
    const clients = [
      {
        id: "cli",
        redirect_uris: ["http://127.0.0.1/cb"],
        resources: ["https://gw.example.com/mcp"],
        client_secret_env: "X"
      }
    ]
    expect(
      problemsOf(yamlOf({ auth: { sso: { clients } } }), { X: "x" }).map((each) => `${each.path}: ${each.message}`)
    ).toEqual(['auth.sso.clients[0].client_secret_env: unknown key "client_secret_env"'])
  })

  it("wrong types say what was expected and what was given", () => {
    const text =
      "server:\n  public_url: 42\n  listen: [a]\nauth:\n  issuer: https://gw.example.com/sso\n  mode: bultin\nrequest_timeout: 30\n"
    expect(problemsOf(text)).toEqual([
      { path: "server.public_url", line: 2, message: "expected a string, got 42" },
      { path: "server.listen", line: 3, message: "expected a string, got a list" },
      { path: "auth.mode", line: 6, message: 'expected "builtin" or "external", got "bultin"' },
      { path: "request_timeout", line: 7, message: "expected a duration such as 500ms, 30s, 5m or 24h, got 30" }
    ])
  })

  it("union failures (storage, backend credentials) read as one message on the right key", () => {
    const text = yamlOf({
      storage: { type: "mysql" },
      backends: [
        { id: "a", url: "https://a.example.com/mcp", credentials: { type: "bearer", tokn: "x" } },
        { id: "b", url: "https://b.example.com/mcp", credentials: "secret" }
      ]
    })
    const messages = problemsOf(text).map(({ path, message }) => `${path}: ${message}`)
    expect(messages).toEqual([
      'storage.type: expected "sqlite" or "postgres", got "mysql"',
      'backends[0].credentials.token: missing required key "token"',
      'backends[0].credentials.tokn: unknown key "tokn"',
      'backends[1].credentials: expected a mapping, got "secret"'
    ])
  })

  it("admin.required_scopes names at least one scope (none would make every user an administrator)", () => {
    const problems = problemsOf(yamlOf({ admin: { required_scopes: [] } }))
    expect(problems.map((each) => `${each.path}: ${each.message}`)).toEqual([
      "admin.required_scopes: must name at least one scope, got an empty list"
    ])
  })

  it("a huge duration is a problem, not an overflow", () => {
    const problems = problemsOf(yamlOf({ drain_timeout: "99999999999999999999999h" }))
    expect(problems.map((each) => each.message)).toEqual(['duration is too large, got "99999999999999999999999h"'])
  })

  it("collects schema, environment and rule problems together", () => {
    const text = yamlOf({
      server: { lisen: "x" },
      request_timeout: "${TIMEOUT}",
      admin: { approvals: { notifications: { url: "http://hooks.example.com", secret: "short" } } }
    })
    const paths = problemsOf(text).map((each) => each.path)
    expect(paths).toEqual(
      expect.arrayContaining([
        "server.lisen",
        "request_timeout",
        "admin.approvals.notifications.url",
        "admin.approvals.notifications.secret"
      ])
    )
  })

  it("does not report a value twice when its variable is missing", () => {
    const problems = problemsOf(yamlOf({ server: { public_url: "${PUBLIC_URL}" } }))
    expect(problems).toEqual([
      { path: "server.public_url", line: 2, message: "environment variable PUBLIC_URL is not set" }
    ])
  })

  it("never echoes a value that came from the environment", () => {
    const problems = problemsOf(yamlOf({ server: { public_url: "${PUBLIC_URL}" } }), { PUBLIC_URL: "hunter2-secret" })
    expect(problems[0]?.message).toBe("expected an absolute URL, got the value built from ${PUBLIC_URL}")
  })
})
