/**
 * `gateway init-admin` (docs/authorization-server.md) creates the built-in administrator; `--reset` and
 * `--reset-mfa` recover it with the same configuration key and database. The real executable.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { newConfigKey } from "../support/gateway-process.js"
import { runGateway } from "../support/oauth-cli.js"

let dir = ""
let config = ""
const key = newConfigKey()

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "gateway-init-admin-"))
  config = join(dir, "gateway.yaml")
  writeFileSync(
    config,
    [
      "server: { listen: 127.0.0.1:18999, public_url: http://127.0.0.1:18999/mcp }",
      "auth: { issuer: http://127.0.0.1:18999/sso }",
      `storage: { type: sqlite, path: ${join(dir, "gateway.db")} }`,
      ""
    ].join("\n")
  )
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const initAdmin = (
  flags: ReadonlyArray<string>,
  stdin?: string,
  env: Record<string, string> = { GATEWAY_CONFIG_KEY: key }
) => runGateway(["init-admin", "--config", config, ...flags], { env, ...(stdin === undefined ? {} : { stdin }) })

describe("gateway init-admin", () => {
  // Policy details (password length, what --reset-mfa keeps) are covered in test/identity/admin.test.ts.
  // Six processes in a row, three of them hashing a password (scrypt): about 10 s on a busy 2-core machine.
  it("creates the administrator once, shows the generated password once, then recovers it", async () => {
    const noKey = await initAdmin([], undefined, {})
    expect(noKey.code).toBe(1)
    expect(noKey.stderr).toContain("GATEWAY_CONFIG_KEY is not set")

    const created = await initAdmin([])
    expect(created.code).toBe(0)
    expect(created.stdout).toMatch(
      /^Created the built-in administrator "admin"\.\nPassword \(shown once, store it now\): [A-Za-z0-9_-]{24}\n/
    )

    const again = await initAdmin([])
    expect(again.code).toBe(1)
    expect(again.stderr).toContain("already exists: use `gateway init-admin --reset`")
    expect(again.stdout).not.toContain("Password")
    // With a password too short, the command still says what cannot be done at all: the account exists.
    const againShort = await initAdmin(["--password-stdin"], "\n")
    expect(againShort.code).toBe(1)
    expect(againShort.stderr).toContain("already exists: use `gateway init-admin --reset`")
    expect(againShort.stderr).not.toContain("at least 12 characters")

    const wrongKey = await initAdmin(["--reset"], undefined, { GATEWAY_CONFIG_KEY: newConfigKey() })
    expect(wrongKey.code).toBe(1)
    expect(wrongKey.stderr).toContain("does not match the key this database was created with")

    const fromStdin = await initAdmin(["--reset", "--password-stdin"], "a new long passphrase\n")
    expect(fromStdin.code).toBe(0)
    expect(fromStdin.stdout).toContain("The password was set from standard input.")
    expect(fromStdin.stdout).not.toContain("a new long passphrase")

    const generated = await initAdmin(["--reset", "--reset-mfa"])
    expect(generated.code).toBe(0)
    expect(generated.stdout).toContain("Its second factor was cleared")
    expect(generated.stdout).toMatch(/Password \(shown once, store it now\): [A-Za-z0-9_-]{24}/)
  }, 60_000)
})
