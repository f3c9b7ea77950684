/**
 * The development setup (docs/access-policy.md, "The development setup"): under `--dev` the developer
 * is granted every configured backend's tools through `"*"` — a backend a newcomer adds shows its tools
 * at once, not an empty `tools/list` — and without `--dev` nothing is granted. Spawned gateways, the
 * real demo backend and a real second MCP backend.
 */
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { SqliteClient } from "@effect/sql-sqlite-node"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as z from "zod/v4"
import { DEVELOPMENT_GROUP_NAME, ensureDevelopmentAccess } from "../../src/demo/dev-access.js"
import { startDemoBackend } from "../../src/demo/serve.js"
import { GroupRepo } from "../../src/store/groups.js"
import { freePort, runGatewayCommand, startGateway } from "../support/gateway-process.js"
import { startBackend, type TestBackend } from "../support/mcp-backends.js"
import { connectClient } from "../support/mcp-clients.js"
import { startTestGateway } from "../support/mcp-gateway.js"

let demo: Awaited<ReturnType<typeof startDemoBackend>>
let demoPort: number
let mine: TestBackend
const cleanup: Array<() => Promise<void>> = []

beforeAll(async () => {
  demoPort = await freePort()
  demo = await startDemoBackend(demoPort)
  mine = await startBackend("mine", (server) => {
    server.registerTool("hello", { inputSchema: z.object({ name: z.string() }) }, async ({ name }) => ({
      content: [{ type: "text", text: `hello ${name}` }]
    }))
  })
})
afterAll(async () => {
  for (const each of cleanup.reverse()) await each()
  await mine?.stop()
  await new Promise((done) => demo?.close(done))
})

const backends = () => [
  { id: "demo", url: `http://127.0.0.1:${demoPort}/mcp`, allow_insecure_http: true, tool_rules: [{ tools: ["*"] }] },
  { id: "mine", url: mine.url, allow_insecure_http: true, tool_rules: [{ tools: ["*"] }] }
]

const config = (port: number, dir: string) => `
server: { listen: "127.0.0.1:${port}", public_url: "http://127.0.0.1:${port}/mcp" }
auth: { issuer: "http://127.0.0.1:${port}/sso" }
storage: { type: sqlite, path: "${join(dir, "gateway.db")}" }
backends: ${JSON.stringify(backends())}
`

const toolNames = async (mcpUrl: string, token: string) => {
  const client = await connectClient(mcpUrl, token)
  cleanup.push(() => client.close())
  return { client, names: (await client.listTools()).tools.map((tool) => tool.name) }
}

describe("the development setup", () => {
  it("a gateway started with --dev and a second backend shows that backend's tools to the development user; without --dev nothing is granted", async () => {
    const port = await freePort()
    const dev = await startGateway({
      port,
      args: ["--dev"],
      env: { GATEWAY_CONFIG_KEY: undefined },
      config: (dir) => config(port, dir)
    })
    cleanup.push(() => dev.stop())
    const minted = await runGatewayCommand(["dev-token", "--config", dev.configFile], { cwd: dev.dir })
    expect(minted.code).toBe(0)
    const { client, names } = await toolNames(`${dev.baseUrl}/mcp`, minted.stdout.trim())
    expect(names).toEqual(expect.arrayContaining(["mine__hello", "demo__list_notes", "demo__create_note"]))
    expect((await client.callTool({ name: "mine__hello", arguments: { name: "newcomer" } })).content).toEqual([
      { type: "text", text: "hello newcomer" }
    ])

    // The same configuration served without --dev: no developer, no development group, no grant.
    const otherPort = await freePort()
    const plain = await startGateway({ port: otherPort, config: (dir) => config(otherPort, dir) })
    const stored = await Effect.runPromise(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const developers = yield* sql<{ readonly id: string }>`SELECT id FROM users WHERE username = 'developer'`
        const groups = yield* sql<{ readonly name: string }>`SELECT name FROM groups`
        return { developers, groups: groups.map((row) => row.name) }
      }).pipe(Effect.provide(SqliteClient.layer({ filename: join(plain.dir, "gateway.db"), readonly: true })))
    )
    await plain.stop()
    expect(stored.developers).toEqual([])
    expect(stored.groups).toEqual(["Administrators"])
  }, 60_000)

  it("a backend configured after the development group was made is added to it; what the group grants stays", async () => {
    const gateway = await startTestGateway({ policy: "store", patch: { backends: backends() } })
    cleanup.push(() => gateway.close())
    const { config: full } = gateway.loaded()
    const demoOnly = { ...full, backends: full.backends.filter((backend) => backend.id === "demo") }
    const developerId = await gateway.run(ensureDevelopmentAccess(demoOnly))
    const token = await gateway.token({ subject: developerId })
    const before = await toolNames(gateway.mcpUrl, token)
    expect(before.names).toContain("demo__list_notes")
    expect(before.names).not.toContain("mine__hello")

    // The next `--dev` start names a second backend.
    expect(await gateway.run(ensureDevelopmentAccess(full))).toBe(developerId)
    const after = await toolNames(gateway.mcpUrl, token)
    expect(after.names).toEqual(expect.arrayContaining(["demo__list_notes", "mine__hello"]))
    const group = await gateway.run(
      Effect.map(GroupRepo, (groups) => groups.list).pipe(
        Effect.flatten,
        Effect.map((rows) => rows.filter((row) => row.name === DEVELOPMENT_GROUP_NAME))
      )
    )
    expect(group).toHaveLength(1)
    expect(group[0]?.permissions?.access.map((entry) => [entry.endpoint_id, entry.tools])).toEqual([
      ["demo", ["*"]],
      ["mine", ["*"]]
    ])
    // A third start changes nothing.
    await gateway.run(ensureDevelopmentAccess(full))
    const again = await gateway.run(Effect.flatMap(GroupRepo, (groups) => groups.find(group[0]!.id)))
    expect(again?.revision).toBe(group[0]?.revision)
  })
})
