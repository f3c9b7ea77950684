/**
 * `gateway admin <kind> …` and `gateway admin proposals …` (docs/management-api.md, "The `gateway admin`
 * commands"): the built executable against a spawned gateway, with a script's token. JSON in (inline or
 * standard input) and out, never coloured; `--if-match`; exit codes a script can test; secrets never
 * printed.
 */
import { afterAll, describe, expect, it } from "vitest"
import { adminCliGateway } from "../support/admin-cli.js"

const SECRET = "cli-secret-header-0123456789"
const cleanup: Array<() => Promise<void>> = []
afterAll(async () => {
  for (const step of cleanup.reverse()) await step()
})

describe("gateway admin backends / proposals", () => {
  it("creates, shows, updates, deletes a backend and lists proposals, with JSON out and exit codes", async () => {
    const { gateway, run } = await adminCliGateway()
    cleanup.push(() => gateway.stop())
    const admin = (args: ReadonlyArray<string>, stdin?: string) => run(["admin", ...args], stdin)

    const empty = await admin(["backends", "list"])
    expect([empty.code, JSON.parse(empty.stdout)]).toEqual([0, { managed: false, items: [] }])
    const definition = { id: "crm", url: "https://127.0.0.1:9/mcp", headers: { "x-key": SECRET } }
    const created = await admin(["backends", "create", "--json", "-"], JSON.stringify(definition))
    expect([created.code, JSON.parse(created.stdout)]).toEqual([
      0,
      expect.objectContaining({
        id: "crm",
        revision: "1",
        definition: expect.objectContaining({ headers: { "x-key": { configured: true } } })
      })
    ])
    const shown = await admin(["backends", "show", "crm"])
    expect(JSON.parse(shown.stdout)).toMatchObject({ kind: "backend", id: "crm", revision: "1" })

    const kept = JSON.stringify({ ...definition, headers: { "x-key": { configured: true } }, enabled: false })
    const stale = await admin(["backends", "update", "crm", "--if-match", "7", "--json", kept])
    expect([stale.code, JSON.parse(stale.stdout)]).toEqual([
      5,
      expect.objectContaining({ error: "precondition_failed" })
    ])
    const updated = await admin(["backends", "update", "crm", "--if-match", "1", "--json", kept])
    expect([updated.code, JSON.parse(updated.stdout)]).toEqual([
      0,
      expect.objectContaining({ revision: "2", definition: expect.objectContaining({ enabled: false }) })
    ])
    const tricky = await admin(["backends", "show", "../etc"])
    expect([tricky.code, tricky.stdout]).toEqual([2, ""])
    const wrongType = await admin(["tool-groups", "create", "--json", '{"id":"g","members":"crm"}'])
    expect([wrongType.code, JSON.parse(wrongType.stdout)]).toEqual([
      6,
      expect.objectContaining({ error: "invalid_request" })
    ])
    const deleted = await admin(["backends", "delete", "crm", "--if-match", "2"])
    expect([deleted.code, JSON.parse(deleted.stdout)]).toEqual([0, { deleted: "crm" }])
    expect((await admin(["backends", "show", "crm"])).code).toBe(4)
    const proposals = await admin(["proposals", "list", "--state", "pending_approval"])
    expect([proposals.code, JSON.parse(proposals.stdout)]).toEqual([0, { items: [] }])

    for (const run of [empty, created, shown, stale, updated, deleted, proposals]) {
      expect(run.stdout).not.toContain("\u001b")
      expect(run.stdout + run.stderr).not.toContain(SECRET)
    }
    expect(gateway.stderr()).not.toContain(SECRET)
    expect(gateway.stderr()).toContain('"config.applied"')
  }, 90_000)
})
