import { spawn } from "node:child_process"
import { join, resolve } from "node:path"

const root = resolve(import.meta.dirname, "../..")
const tsxLoader = join(root, "node_modules/tsx/dist/loader.mjs")
const mainEntry = join(root, "src/main.ts")

export interface CommandResult {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** Runs `gateway <args>` through tsx with `stdin` as standard input and only the given environment. */
export const runGateway = (
  args: ReadonlyArray<string>,
  options: { readonly env: Record<string, string>; readonly stdin?: string; readonly cwd?: string }
): Promise<CommandResult> =>
  new Promise((done, fail) => {
    const child = spawn(process.execPath, ["--import", tsxLoader, mainEntry, ...args], {
      cwd: options.cwd ?? root,
      env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "/tmp", ...options.env },
      stdio: ["pipe", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk) => {
      stdout += chunk
    })
    child.stderr.on("data", (chunk) => {
      stderr += chunk
    })
    child.stdin.end(options.stdin ?? "")
    const timer = setTimeout(() => {
      child.kill("SIGKILL")
      fail(new Error(`gateway ${args.join(" ")} did not finish\n${stderr}`))
    }, 30_000)
    child.on("exit", (code) => {
      clearTimeout(timer)
      done({ code, stdout, stderr })
    })
  })
