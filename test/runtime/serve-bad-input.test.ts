/**
 * Bad input at start-up: a clear message naming the problem, a non-zero exit, and nothing created or
 * changed on disk (docs/operations.md, "Exit codes"; docs/storage.md).
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterEach, beforeEach, describe, expect, it } from "vitest"
import { freePort, newConfigKey, runGatewayCommand } from "../support/gateway-process.js"

let dir: string
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "gateway-bad-"))
})
afterEach(() => {
  chmodSync(dir, 0o700)
  rmSync(dir, { recursive: true, force: true })
})

const config = (storage: string) => `
server:
  listen: 127.0.0.1:1
  public_url: http://127.0.0.1:1/mcp
auth:
  issuer: http://127.0.0.1:1/sso
storage:
${storage}
`

const serve = (file: string, env: Record<string, string | undefined> = { GATEWAY_CONFIG_KEY: newConfigKey() }) =>
  runGatewayCommand(["serve", "--config", file], { env, cwd: dir })

const write = (name: string, text: string) => {
  const file = join(dir, name)
  writeFileSync(file, text)
  return file
}

describe("gateway serve refuses bad input", () => {
  it("prints the version 2.4.0", async () => {
    const result = await runGatewayCommand(["--version"])
    expect(result.code).toBe(0)
    expect(result.stdout.trim()).toBe("2.4.0")
  })

  it("without GATEWAY_CONFIG_KEY outside --dev: says how to make one, creates nothing", async () => {
    const file = write("gateway.yaml", config(`  type: sqlite\n  path: ${dir}/data/gateway.db`))
    const result = await serve(file, {})
    expect(result.code).toBe(1)
    expect(result.stderr).toContain("GATEWAY_CONFIG_KEY is not set")
    expect(result.stderr).toContain("openssl rand -base64 32")
    expect(readdirSync(dir)).toEqual(["gateway.yaml"])
  })

  it("without GATEWAY_CONFIG_KEY beside npm start's development key file: names that file and --dev, creates nothing", async () => {
    const file = write("gateway.yaml", config(`  type: sqlite\n  path: ${dir}/data/gateway.db`))
    mkdirSync(join(dir, "data"))
    writeFileSync(join(dir, "data/dev-config.key"), `${newConfigKey()}\n`, { mode: 0o600 })
    const result = await serve(file, {})
    expect(result.code).toBe(1)
    expect(result.stderr).toContain("GATEWAY_CONFIG_KEY is not set, and data/dev-config.key is here")
    expect(result.stderr).toContain("`gateway serve --dev`")
    expect(readdirSync(join(dir, "data"))).toEqual(["dev-config.key"])
  })

  it.each(["server.listen", "admin.listen"])(
    "an address in use for %s is named with its setting and what to do",
    async (setting) => {
      const squatter = createServer()
      const port = await new Promise<number>((done) =>
        squatter.listen(0, "127.0.0.1", () => done((squatter.address() as { port: number }).port))
      )
      try {
        const taken = `127.0.0.1:${port}`
        const free = `127.0.0.1:${await freePort()}`
        const publicAddress = setting === "server.listen" ? taken : free
        const file = write(
          "gateway.yaml",
          `${config(`  type: sqlite\n  path: ${dir}/gateway.db`).replace("listen: 127.0.0.1:1", `listen: ${publicAddress}`)}admin:\n  listen: ${setting === "admin.listen" ? taken : free}\n`
        )
        const result = await serve(file)
        expect(result.code).toBe(1)
        expect(result.stderr).toContain(
          `cannot listen on ${taken} (${setting}): the address is in use, most likely by another gateway or program; stop it, or choose another address in ${setting}`
        )
      } finally {
        squatter.close()
      }
    }
  )

  it("a malformed key is refused without echoing it", async () => {
    const file = write("gateway.yaml", config(`  type: sqlite\n  path: ${dir}/gateway.db`))
    const result = await serve(file, { GATEWAY_CONFIG_KEY: "c2hvcnQta2V5LXZhbHVl" })
    expect(result.code).toBe(1)
    expect(result.stderr).toContain("decodes to 15 bytes, not 32")
    expect(result.stderr).not.toContain("c2hvcnQta2V5LXZhbHVl")
    expect(existsSync(join(dir, "gateway.db"))).toBe(false)
  })

  it("an invalid configuration exits 2 listing every problem with its line, before touching storage", async () => {
    const file = write(
      "gateway.yaml",
      `${config(`  type: sqlite\n  path: ${dir}/gateway.db`)}request_timeout: soon\nlisen: 1\n`
    )
    const result = await serve(file)
    expect(result.code).toBe(2)
    expect(result.stderr).toMatch(/gateway\.yaml:10: request_timeout: .*duration/)
    expect(result.stderr).toMatch(/gateway\.yaml:11: .*unknown key "lisen"/)
    expect(readdirSync(dir)).toEqual(["gateway.yaml"])
  })

  it("an empty file and an unreadable path are named", async () => {
    const empty = await serve(write("empty.yaml", ""))
    expect(empty.code).toBe(2)
    expect(empty.stderr).toContain("empty")
    const missing = await serve(join(dir, "nope.yaml"))
    expect(missing.code).toBe(2)
    expect(missing.stderr).toContain("nope.yaml")
  })

  it("a database path that is not writable is refused and nothing is created", async () => {
    // Root ignores permission bits; sysfs refuses new files to everyone, root included.
    const locked = process.getuid?.() === 0 ? "/sys" : join(dir, "locked")
    if (locked !== "/sys") {
      mkdirSync(locked)
      chmodSync(locked, 0o500)
    }
    const path = join(locked, `gateway-${process.pid}.db`)
    const file = write("gateway.yaml", config(`  type: sqlite\n  path: ${path}`))
    const result = await serve(file)
    expect(result.code).toBe(1)
    expect(result.stderr).toContain(path)
    expect(existsSync(path)).toBe(false)
  })

  it("an unreachable PostgreSQL is reported clearly and quickly, without the password", async () => {
    const file = write("gateway.yaml", config(`  type: postgres\n  url: postgres://gw:s3cret-pw@127.0.0.1:1/test`))
    const started = Date.now()
    const result = await serve(file)
    expect(result.code).toBe(1)
    expect(result.stderr).toContain("127.0.0.1:1")
    expect(result.stderr).not.toContain("s3cret-pw")
    expect(Date.now() - started).toBeLessThan(15_000)
  })
})
