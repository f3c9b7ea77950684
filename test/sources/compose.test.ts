/**
 * docs/tool-sources.md, "Managed storage" — composition and initialization on a real gateway and store:
 * before initialization a generation runs the YAML backends; `POST /api/v1/tool-sources/initialize`
 * imports them once; afterwards a configuration read from the file composes the database's backends,
 * an edit to the file's backends[] has no effect and the log says so; `gateway validate` tells too.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { managedNote } from "../../src/cli/validate.js"
import { composeSources } from "../../src/sources/compose.js"
import { probeManagedState } from "../../src/sources/initialized-probe.js"
import { adminToken, managementApi } from "../support/admin-api.js"
import { storeKinds } from "../support/databases.js"
import { LogCapture } from "../support/logs.js"
import { oauthGateway } from "../support/oauth-gateway.js"

const yamlBackend = (id: string) => ({ id, url: `https://${id}.example.com/mcp` })

describe.each(storeKinds)("managed storage (%s)", (kind) => {
  it.scopedLive(
    "initialization imports the YAML backends once; afterwards the file's backends[] are ignored, and said so",
    () =>
      Effect.gen(function* () {
        const gateway = yield* oauthGateway({ kind, patch: { backends: [yamlBackend("crm")] } })
        const api = managementApi(gateway, yield* adminToken(gateway, {}, Date.now()))
        expect(yield* probeManagedState(gateway.loaded.config)).toBe("not_initialized")
        const before = yield* Effect.provide(composeSources(gateway.loaded), gateway.base)
        expect(before.config.backends.map((backend) => backend.id)).toEqual(["crm"])
        expect(before.sources).toEqual({ managed: false, http: [], toolGroups: [] })

        // The action takes no fields: one sent is named, not ignored, and nothing is initialized.
        const withField = yield* api.post("/api/v1/tool-sources/initialize", { dry_run: true })
        expect(withField).toMatchObject({
          status: 400,
          body: {
            error: "invalid_request",
            error_description: "dry_run: is not a field of this action (it takes none)"
          }
        })
        expect(yield* probeManagedState(gateway.loaded.config)).toBe("not_initialized")
        const emptyObject = yield* api.post("/api/v1/tool-sources/initialize", {})
        expect(emptyObject.status).toBe(200)
        expect(emptyObject.body).toMatchObject({ managed: true, imported: ["crm"] })
        const initialized = yield* api.post("/api/v1/tool-sources/initialize", undefined)
        expect(initialized.status).toBe(200)
        expect(initialized.body).toMatchObject({ managed: true, imported: [] })
        const again = yield* api.post("/api/v1/tool-sources/initialize", undefined)
        expect(again.body).toMatchObject({ managed: true, imported: [] })
        expect(yield* probeManagedState(gateway.loaded.config)).toBe("initialized")

        // The file edited (another backend) and read again, as SIGHUP does: the database's backends run.
        const logs = new LogCapture()
        const edited = {
          ...gateway.loaded,
          config: {
            ...gateway.loaded.config,
            backends: [...gateway.loaded.config.backends, ...before.config.backends.map((b) => ({ ...b, id: "erp" }))]
          }
        }
        const after = yield* logs.capture(Effect.provide(composeSources(edited), gateway.base))
        expect(after.config.backends.map((backend) => backend.id)).toEqual(["crm"])
        expect(after.sources?.managed).toBe(true)
        expect(logs.text()).toContain("the configuration file's backends[] are ignored")
        expect(managedNote(2, "initialized")).toContain("the 2 entries of backends[] in this file are ignored")
        expect(managedNote(2, { unknown: "connection refused" })).toContain(
          "cannot tell whether managed storage is initialized"
        )
        expect(managedNote(0, "initialized")).toBeUndefined()
      })
  )
})
