/**
 * The archive signing key (docs/audit-archive.md, "The key"): Base64 of the seed then its public key. A
 * public half that is not the seed's is refused by `gateway validate` and by `gateway serve`, which does
 * not start, with a message naming the key and never its value.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { newArchiveKeyText } from "../../support/archive-file.js"
import { newConfigKey, runGatewayCommand } from "../../support/gateway-process.js"

const dir = mkdtempSync(join(tmpdir(), "archive-key-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const good = newArchiveKeyText()
const mismatched = Buffer.concat([
  Buffer.from(good, "base64").subarray(0, 32),
  Buffer.from(newArchiveKeyText(), "base64").subarray(32)
]).toString("base64")

const configFile = () => {
  const file = join(dir, "gateway.yaml")
  writeFileSync(
    file,
    [
      "server: { listen: 127.0.0.1:18080, public_url: http://127.0.0.1:18080/mcp }",
      "auth: { issuer: http://127.0.0.1:18080/sso }",
      `storage: { type: sqlite, path: ${join(dir, "gateway.db")} }`,
      "admin:",
      "  listen: 127.0.0.1:18081",
      "  approvals:",
      "    audit_archive:",
      "      url: https://archive.example.com/in",
      "      key_id: k1",
      // The key through ${VAR} expansion, as an operator gives it.
      `      signing_key: "$${"{AUDIT_KEY}"}"`,
      ""
    ].join("\n")
  )
  return file
}

describe("the audit archive signing key", () => {
  it("a key whose public half is the seed's is valid", async () => {
    const result = await runGatewayCommand(["validate", "--config", configFile()], { env: { AUDIT_KEY: good } })
    expect(result.code).toBe(0)
  })

  it("validate and serve refuse a key whose public half is not the seed's, saying so and never printing it", async () => {
    const file = configFile()
    const env = { AUDIT_KEY: mismatched, GATEWAY_CONFIG_KEY: newConfigKey() }
    for (const args of [
      ["validate", "--config", file],
      ["serve", "--config", file]
    ]) {
      const result = await runGatewayCommand(args, { env })
      expect(result.code).toBe(2)
      expect(result.stderr).toContain(
        "admin.approvals.audit_archive.signing_key: the public half (bytes 33-64) does not belong to the seed"
      )
      expect(result.stdout + result.stderr).not.toContain(mismatched)
      expect(result.stdout + result.stderr).not.toContain(mismatched.slice(0, 20))
    }
  })
})
