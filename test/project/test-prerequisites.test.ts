/**
 * `npm test` checks what it needs from the machine before its type check and linter (about 45 s): a
 * missing Chromium, slapd, promtool or PostgreSQL is named at once, with the command that installs it.
 */
import { execFile } from "node:child_process"
import { readFileSync } from "node:fs"
import { join, resolve } from "node:path"
import { describe, expect, it } from "vitest"
import {
  CHROMIUM_INSTALL,
  missingChromium,
  missingPromtool,
  missingSlapd,
  PROMTOOL_INSTALL,
  SLAPD_INSTALL,
  unreachablePostgres
} from "../../scripts/test-prerequisites.mjs"
import { freePort } from "../support/gateway-process.js"

const root = resolve(import.meta.dirname, "../..")

const runCheck = (env: Record<string, string>) =>
  new Promise<{ code: number; stderr: string }>((done) =>
    execFile(
      process.execPath,
      [join(root, "scripts/test-prerequisites.mjs")],
      { env: { PATH: process.env["PATH"] ?? "", ...env } },
      (error, _stdout, stderr) => done({ code: error === null ? 0 : Number(error.code), stderr })
    )
  )

describe("npm test's first step (scripts/test-prerequisites.mjs)", () => {
  it("runs before the type check, the linter and vitest", () => {
    const { scripts } = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
      scripts: Record<string, string>
    }
    expect(scripts["test"]).toMatch(/^node scripts\/test-prerequisites\.mjs && npm run typecheck && /)
  })

  it("names a missing Chromium or slapd with the apt command that installs it, and nothing when they are there", () => {
    expect(missingChromium("/nonexistent/chromium")).toContain(`\`${CHROMIUM_INSTALL}\``)
    expect(missingChromium(process.execPath)).toBeUndefined()
    const slapd = missingSlapd(["/nonexistent/slapd", process.execPath])
    expect(slapd).toContain("OpenLDAP's /nonexistent/slapd, and it is not there")
    expect(slapd).toContain(`\`${SLAPD_INSTALL}\``)
    expect(missingSlapd([process.execPath])).toBeUndefined()
  })

  it("names a missing promtool with the apt command that installs it, and nothing when it is there", () => {
    const promtool = missingPromtool("/nonexistent/promtool")
    expect(promtool).toContain("promtool at /nonexistent/promtool, and it is not there")
    expect(promtool).toContain(`\`${PROMTOOL_INSTALL}\``)
    expect(missingPromtool(process.execPath)).toBeUndefined()
  })

  it("names a PostgreSQL that cannot be reached, and nothing when it answers", async () => {
    const closed = await freePort()
    expect(await unreachablePostgres(`postgres://postgres@127.0.0.1:${closed}/test`)).toContain(
      `PostgreSQL at 127.0.0.1:${closed}`
    )
    expect(await unreachablePostgres()).toBeUndefined()
  })

  it("exits 1 listing every problem, and 0 on a machine that has everything", async () => {
    const closed = await freePort()
    const failed = await runCheck({ GATEWAY_TEST_PG_URL: `postgres://postgres@127.0.0.1:${closed}/test` })
    expect(failed.code).toBe(1)
    expect(failed.stderr).toContain("npm test cannot run on this machine yet")
    expect(failed.stderr).toContain(`PostgreSQL at 127.0.0.1:${closed}`)
    const passed = await runCheck(
      process.env["GATEWAY_TEST_PG_URL"] === undefined
        ? {}
        : { GATEWAY_TEST_PG_URL: process.env["GATEWAY_TEST_PG_URL"] }
    )
    expect(passed).toEqual({ code: 0, stderr: "" })
  })
})
