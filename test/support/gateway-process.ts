import { type ChildProcess, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"

const root = resolve(import.meta.dirname, "../..")

/**
 * The `gateway` executable as built for this run (test/support/gateway-bundle.ts, a vitest globalSetup):
 * `main.js` is dist/main.js from the current sources, `serve-for-tests.js` the same with one test-only route,
 * `demo.js` what `npm start` runs.
 */
// Loaded only under vitest: the benchmarks import this file's helpers (freePort) outside it, where
// importing vitest throws.
const vitest = process.env["VITEST"] === undefined ? undefined : await import("vitest")

/** This run's build of dist/ (`main.js`, `demo.js`, `serve-for-tests.js` and their chunks). */
export const gatewayBundleDirectory = (): string => {
  const dir = vitest?.inject("gatewayBundle")
  if (dir === undefined)
    throw new Error("no gateway bundle: run the tests with vitest.config.ts (its globalSetup builds it)")
  return dir
}

const bundled = (entry: "main" | "serve-for-tests") => join(gatewayBundleDirectory(), `${entry}.js`)

/** The path of `gateway` itself (dist/main.js built from the current sources), for `node <path> <args>`. */
export const gatewayExecutable = (): string => bundled("main")

export const newConfigKey = () => randomBytes(32).toString("base64")

export interface RunResult {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** Runs the `gateway` executable to completion. */
export const runGatewayCommand = (
  args: ReadonlyArray<string>,
  options: { env?: Record<string, string | undefined>; cwd?: string; timeoutMs?: number; stdin?: string } = {}
): Promise<RunResult> =>
  new Promise((done, fail) => {
    const child = spawn(process.execPath, [gatewayExecutable(), ...args], {
      cwd: options.cwd ?? root,
      env: cleanEnv(options.env),
      stdio: ["pipe", "pipe", "pipe"]
    })
    // An empty, closed standard input unless the test gives one: never a terminal.
    child.stdin.end(options.stdin ?? "")
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk) => {
      stdout += chunk
    })
    child.stderr.on("data", (chunk) => {
      stderr += chunk
    })
    const timer = setTimeout(() => {
      child.kill("SIGKILL")
      fail(new Error(`gateway ${args.join(" ")} did not finish\n${stderr}`))
    }, options.timeoutMs ?? 20_000)
    child.on("exit", (code) => {
      clearTimeout(timer)
      done({ code, stdout, stderr })
    })
  })

// The child gets a minimal environment: PATH and HOME for tooling, plus what the test passes.
const cleanEnv = (extra: Record<string, string | undefined> = {}) => {
  const env: Record<string, string> = { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "/tmp" }
  for (const [key, value] of Object.entries(extra)) if (value !== undefined) env[key] = value
  return env
}

export interface GatewayProcess {
  readonly dir: string
  /** The admin listener's origin, when the test's file named no `admin` section. */
  readonly adminUrl: string
  readonly configFile: string
  readonly baseUrl: string
  readonly child: ChildProcess
  /** Everything the process wrote to stderr so far. */
  stderr(): string
  /** Resolves when a stderr line containing `text` appears after `from` (an offset into stderr). */
  waitForLog(text: string, from?: number, timeoutMs?: number): Promise<void>
  readonly exited: Promise<number | null>
  writeConfig(text: string): void
  stop(): Promise<void>
}

/**
 * Starts `gateway serve` in a temp directory with the given YAML (its `{{port}}` placeholder is
 * replaced by a free port the test picks) and waits for it to serve.
 */
export const startGateway = async (options: {
  config: (dir: string) => string
  /** Added to the child's environment; `GATEWAY_CONFIG_KEY: undefined` starts it without one. */
  env?: Record<string, string | undefined>
  port: number
  /** Extra `serve` flags, e.g. `--dev` (accepts `gateway dev-token` tokens; GATEWAY_CONFIG_KEY still wins). */
  args?: ReadonlyArray<string>
}): Promise<GatewayProcess> => {
  const dir = mkdtempSync(join(tmpdir(), "gateway-test-"))
  const configFile = join(dir, "gateway.yaml")
  // Every gateway also listens for its Management API (admin.listen, default 127.0.0.1:8081): a test
  // file that names none gets a free port, so parallel tests never compete for the default.
  const text = options.config(dir)
  const adminPort = await freePort()
  writeFileSync(configFile, /^admin:/m.test(text) ? text : `${text}\nadmin: { listen: "127.0.0.1:${adminPort}" }\n`)
  const child = spawn(
    process.execPath,
    [bundled("serve-for-tests"), "serve", "--config", configFile, ...(options.args ?? [])],
    {
      cwd: dir,
      env: cleanEnv({ GATEWAY_CONFIG_KEY: newConfigKey(), ...options.env }),
      stdio: ["ignore", "pipe", "pipe"]
    }
  )
  let stderr = ""
  const waiters = new Set<() => void>()
  child.stderr!.on("data", (chunk) => {
    stderr += chunk
    for (const waiter of waiters) waiter()
  })
  child.stdout!.resume()
  const exited = new Promise<number | null>((done) => child.on("exit", (code) => done(code)))
  const waitForLog = (text: string, from = 0, timeoutMs = 15_000) =>
    new Promise<void>((done, fail) => {
      const check = () => {
        if (stderr.indexOf(text, from) >= 0) {
          waiters.delete(check)
          clearTimeout(timer)
          done()
        }
      }
      const timer = setTimeout(() => {
        waiters.delete(check)
        fail(new Error(`timed out waiting for "${text}" in gateway stderr:\n${stderr}`))
      }, timeoutMs)
      waiters.add(check)
      check()
    })
  const gateway: GatewayProcess = {
    dir,
    adminUrl: `http://127.0.0.1:${adminPort}`,
    configFile,
    baseUrl: `http://127.0.0.1:${options.port}`,
    child,
    stderr: () => stderr,
    waitForLog,
    exited,
    writeConfig: (next) =>
      writeFileSync(
        configFile,
        /^admin:/m.test(next) ? next : `${next}\nadmin: { listen: "127.0.0.1:${adminPort}" }\n`
      ),
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGKILL")
        await exited
      }
      rmSync(dir, { recursive: true, force: true })
    }
  }
  await Promise.race([
    waitForLog("gateway serving"),
    exited.then((code) => {
      throw new Error(`gateway exited with ${code} before serving:\n${stderr}`)
    })
  ])
  return gateway
}

/**
 * A port for a listener a test configures (`server.listen` is static configuration, so the test must
 * name it before the gateway binds). Picked below the kernel's ephemeral range (32768+ on Linux) and
 * checked free: a port the kernel hands out itself (`listen(0)`) could be handed again to any
 * outgoing connection — a backend call, a database client — before the gateway binds it. In-process
 * gateways avoid the question: they bind port 0 first and read the port back (test/support/mcp-gateway.ts).
 *
 * Checked free is not yet bound, so two callers must never be handed the same port in that gap: each
 * vitest worker draws from a band of its own (`VITEST_POOL_ID`, 1-based) and walks it in order, so a
 * worker hands a port out again only after every other port of its band (a test that bound one may not
 * have closed it yet). CI once saw "address in use" when two workers drew the same random number.
 */
const BANDS = 4
const BAND_WIDTH = 3_000
const pool = Number(process.env["VITEST_POOL_ID"] ?? "1")
const band = 20_000 + (((Number.isSafeInteger(pool) && pool > 0 ? pool : 1) - 1) % BANDS) * BAND_WIDTH
let cursor = Math.floor(Math.random() * BAND_WIDTH)

export const freePort = async (): Promise<number> => {
  const { createServer } = await import("node:net")
  const tryPort = (port: number) =>
    new Promise<boolean>((done) => {
      const server = createServer()
      server.once("error", () => done(false))
      server.listen(port, "127.0.0.1", () => server.close(() => done(true)))
    })
  for (let attempt = 0; attempt < 200; attempt++) {
    cursor = (cursor + 1) % BAND_WIDTH
    // Read before the await: concurrent callers move the cursor meanwhile.
    const port = band + cursor
    if (await tryPort(port)) return port
  }
  throw new Error(`no free port found between ${band} and ${band + BAND_WIDTH}`)
}
