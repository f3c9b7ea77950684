// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these strings are YAML text, where ${NAME} is meant literally
import { describe, expect, it } from "@effect/vitest"
import { Either, Redacted } from "effect"
import { expandString } from "../../src/config/expand.js"
import { parseConfig } from "../../src/config/load.js"
import { yamlOf } from "../fixtures/config/base.js"

// docs/configuration.md, "Environment variables": every field under auth.sso is literal and does not expand
// ${...}; client_secret_env and directory_token_env hold variable NAMES. Other YAML fields expand environment
// variables.

describe("expandString", () => {
  it("replaces ${NAME} and keeps the rest", () => {
    expect(expandString("https://${HOST}:${PORT}/mcp", { HOST: "gw", PORT: "8443" })).toEqual({
      text: "https://gw:8443/mcp",
      names: ["HOST", "PORT"],
      errors: []
    })
  })

  it("writes a literal ${ for $${ and leaves a lone $ alone", () => {
    expect(expandString("$${HOST} costs $5 and $HOME", { HOST: "x" }).text).toBe("${HOST} costs $5 and $HOME")
  })

  it("never expands a value that came from the environment", () => {
    expect(expandString("${A}", { A: "${B}", B: "nope" }).text).toBe("${B}")
    expect(expandString("${A}", { A: "$${B}" }).text).toBe("$${B}")
  })

  it("expands a variable set to the empty string to nothing", () => {
    expect(expandString("a${EMPTY}b", { EMPTY: "" })).toEqual({ text: "ab", names: ["EMPTY"], errors: [] })
  })

  it("reports a missing variable by name", () => {
    expect(expandString("${MISSING}", {}).errors).toEqual(["environment variable MISSING is not set"])
  })

  it("rejects an unclosed ${ and names that are not variable names", () => {
    expect(expandString("https://${HOST", {}).errors).toEqual(['unclosed "${" (write "$${" for a literal "${")'])
    expect(expandString("${HOST:-x}", {}).errors).toEqual(['invalid variable name "HOST:-x" in "${...}"'])
    expect(expandString("${}", {}).errors).toEqual(['invalid variable name "" in "${...}"'])
  })
})

describe("expansion in a configuration file", () => {
  it("expands strings outside auth.sso, keeping the YAML node's line for problems", () => {
    const text = yamlOf({
      server: { public_url: "https://${HOST}/mcp" },
      auth: { issuer: "https://${HOST}/sso" },
      backends: [{ id: "a", url: "https://a.example.com/mcp", headers: { "X-Key": "${KEY}" } }]
    })
    const { config } = Either.getOrThrow(parseConfig("test.yaml", text, { HOST: "gw.example.com", KEY: "k" }))
    expect(config.server.public_url).toBe("https://gw.example.com/mcp")
    expect(config.backends[0]?.headers).toEqual({ "X-Key": "k" })
  })

  it("reports every missing variable with its YAML path and line", () => {
    const text =
      "server:\n  public_url: ${PUBLIC_URL}\n  listen: ${LISTEN}\nauth:\n  issuer: https://gw.example.com/sso\n"
    const result = parseConfig("test.yaml", text, {})
    expect(Either.isLeft(result) && result.left.problems).toEqual([
      { path: "server.public_url", line: 2, message: "environment variable PUBLIC_URL is not set" },
      { path: "server.listen", line: 3, message: "environment variable LISTEN is not set" }
    ])
  })

  it("keeps everything under auth.sso literal", () => {
    const text = yamlOf({
      auth: {
        sso: {
          clients: [{ id: "${ID}", redirect_uris: ["http://127.0.0.1/cb"], resources: ["https://gw.example.com/mcp"] }]
        }
      }
    })
    const { config } = Either.getOrThrow(parseConfig("test.yaml", text, { ID: "expanded" }))
    expect(config.auth.sso.clients[0]?.id).toBe("${ID}")
  })

  it("resolves client_secret_env and directory_token_env by name into secrets", () => {
    const text = yamlOf({
      auth: {
        sso: {
          upstream: {
            protocol: "oidc",
            issuer: "https://idp.example.com",
            client_id: "gw",
            client_secret_env: "IDP_SECRET"
          },
          directory_token_env: "DIR_TOKEN"
        }
      }
    })
    const env = { IDP_SECRET: "idp-secret", DIR_TOKEN: "d".repeat(32), GATEWAY_CONFIG_KEY: "k" }
    const { secrets } = Either.getOrThrow(parseConfig("test.yaml", text, env))
    expect(secrets.upstreamClientSecret && Redacted.value(secrets.upstreamClientSecret)).toBe("idp-secret")
    expect(secrets.directoryToken && Redacted.value(secrets.directoryToken)).toBe("d".repeat(32))
    expect(secrets.configKey && Redacted.value(secrets.configKey)).toBe("k")
  })

  it("reports a missing secret variable by name and path, hinting when ${...} was written instead of a name", () => {
    const text = yamlOf({
      auth: {
        sso: {
          upstream: {
            protocol: "oidc",
            issuer: "https://idp.example.com",
            client_id: "gw",
            client_secret_env: "${IDP_SECRET}"
          },
          directory_token_env: "DIR_TOKEN"
        }
      }
    })
    const result = parseConfig("test.yaml", text, { IDP_SECRET: "x" })
    const problems = Either.isLeft(result) ? result.left.problems : []
    expect(problems.map(({ path, message }) => `${path}: ${message}`)).toEqual([
      "auth.sso.upstream.client_secret_env: environment variable ${IDP_SECRET} is not set (this key holds a variable NAME; values under auth.sso are not expanded)",
      "auth.sso.directory_token_env: environment variable DIR_TOKEN is not set"
    ])
  })
})
