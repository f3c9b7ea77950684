/**
 * `npm start` runs the bundle, so it must not run one older than the sources: its `prestart` builds
 * dist/ again when an entry point is missing or a source changed after the last build (a `git pull`, an
 * edit), and leaves it alone otherwise. Run for real in a small project of its own: the checkout's
 * package.json scripts and scripts/build.mjs, two entry points of a few lines, real npm and esbuild.
 */
import { execFile } from "node:child_process"
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync
} from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { afterAll, describe, expect, it } from "vitest"

const root = resolve(import.meta.dirname, "../..")
const dir = mkdtempSync(join(tmpdir(), "gateway-build-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const { scripts } = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
  scripts: Record<string, string>
}

/** A project with the checkout's `prestart` and `start`, whose demo entry point prints `text`. */
const project = (() => {
  mkdirSync(join(dir, "scripts"))
  mkdirSync(join(dir, "src/demo"), { recursive: true })
  copyFileSync(join(root, "scripts/build.mjs"), join(dir, "scripts/build.mjs"))
  symlinkSync(join(root, "node_modules"), join(dir, "node_modules"))
  writeFileSync(join(dir, "tsconfig.json"), "{}\n")
  writeFileSync(
    join(dir, "package.json"),
    JSON.stringify({
      name: "build-test",
      private: true,
      type: "module",
      scripts: { prestart: scripts["prestart"], start: scripts["start"] }
    })
  )
  writeFileSync(join(dir, "src/main.ts"), 'console.log("main")\n')
  return dir
})()

const writeDemo = (text: string) =>
  writeFileSync(join(project, "src/demo/start.ts"), `const text: string = ${JSON.stringify(text)}\nconsole.log(text)\n`)

const npmStart = () =>
  new Promise<{ stdout: string; stderr: string }>((done, fail) =>
    execFile(
      "npm",
      ["start", "--silent"],
      { cwd: project, env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "/tmp" } },
      (error, stdout, stderr) =>
        error === null ? done({ stdout, stderr }) : fail(new Error(`${error.message}\n${stderr}`))
    )
  )

const builtAt = () => statSync(join(project, "dist/demo.js")).mtimeMs

describe("npm start's prestart (node scripts/build.mjs --if-stale)", () => {
  it("refuses an option it does not know, with its usage and exit code 2, and builds nothing", async () => {
    const refused = await new Promise<{ code: number; stderr: string }>((done) =>
      execFile(process.execPath, [join(project, "scripts/build.mjs"), "--if-stal"], (error, _stdout, stderr) =>
        done({ code: error === null ? 0 : Number(error.code), stderr })
      )
    )
    expect(refused).toEqual({ code: 2, stderr: "usage: node scripts/build.mjs [--if-stale]\n" })
    expect(existsSync(join(project, "dist"))).toBe(false)
  })

  it("builds dist/ when it is missing, leaves an up-to-date dist/ alone, and builds again after a source changes", async () => {
    writeDemo("first")
    const fresh = await npmStart()
    expect(fresh.stderr).toContain("Building dist/ (dist/main.js is missing)")
    expect(fresh.stdout.trim()).toBe("first")

    const before = builtAt()
    const again = await npmStart()
    expect(again.stderr).not.toContain("Building")
    expect(again.stdout.trim()).toBe("first")
    expect(builtAt()).toBe(before)

    writeDemo("second")
    const edited = await npmStart()
    expect(edited.stderr).toContain("Building dist/ (src/demo/start.ts changed after the last build)")
    expect(edited.stdout.trim()).toBe("second")
  }, 60_000)
})
