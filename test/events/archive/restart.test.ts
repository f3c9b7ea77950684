/**
 * A real `gateway serve` process shipping the audit archive (docs/audit-archive.md, "Shipping") is killed
 * with SIGKILL while its receiver is down and an entry waits for its retry; restarted on the same
 * database, it ships every entry, those sealed before the kill and those after, in order and exactly as
 * stored: nothing lost, repeated in the file or reordered. On SQLite and PostgreSQL.
 */
import { readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import type { StorageConfig } from "../../../src/config/schema.js"
import { verifyArchiveFile } from "../../../src/events/archive/verify-file.js"
import { ArchiveRepo } from "../../../src/store/archive-entries.js"
import { approvalLayerOn, deployArgs, newPeople, pendingOf, requestWrite } from "../../support/approval-service.js"
import { newArchiveKeyText } from "../../support/archive-file.js"
import { startArchiveReceiver } from "../../support/archive-receiver.js"
import { storeKinds, withStorage } from "../../support/databases.js"
import { freePort, type GatewayProcess, newConfigKey, startGateway } from "../../support/gateway-process.js"
import { makeTestCa } from "../../support/test-ca.js"

const ca = makeTestCa()
afterAll(() => ca.remove())

const KEY_ID = "restart-test"
const keyText = newArchiveKeyText()
const publicKey = Buffer.from(keyText, "base64").subarray(32).toString("base64")

const storageYaml = (storage: StorageConfig) =>
  storage.type === "sqlite"
    ? `storage: { type: sqlite, path: "${storage.path}" }`
    : `storage: { type: postgres, url: "${Redacted.value(storage.url)}" }`

const start = async (storage: StorageConfig, configKey: string, url: string) => {
  const port = await freePort()
  const adminPort = await freePort()
  return startGateway({
    port,
    env: { GATEWAY_CONFIG_KEY: configKey, AUDIT_KEY: keyText },
    config: () =>
      [
        `server: { listen: 127.0.0.1:${port}, public_url: http://127.0.0.1:${port}/mcp }`,
        `auth: { issuer: http://127.0.0.1:${port}/sso }`,
        storageYaml(storage),
        "admin:",
        `  listen: 127.0.0.1:${adminPort}`,
        "  approvals:",
        "    audit_archive:",
        `      url: ${url}`,
        `      key_id: ${KEY_ID}`,
        // The key through ${VAR} expansion, as an operator gives it.
        `      signing_key: $${"{AUDIT_KEY}"}`,
        `      ca_file: ${ca.caFile}`,
        ""
      ].join("\n")
  })
}

const waitUntil = async (what: string, holds: () => boolean, timeoutMs = 30_000) => {
  const until = Date.now() + timeoutMs
  while (!holds()) {
    if (Date.now() > until) throw new Error(`timed out waiting until ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

describe.each(storeKinds)("audit archive across a SIGKILL (%s)", (kind) => {
  it.scopedLive(
    "a gateway killed while an entry waits for its retry ships everything in order after its restart",
    () =>
      Effect.gen(function* () {
        const storage = yield* withStorage(kind)
        const configKey = newConfigKey()
        const receiving = yield* Effect.acquireRelease(
          Effect.promise(() =>
            startArchiveReceiver(ca, join(tmpdir(), `archive-restart-${process.pid}-${kind}.jsonl`), {
              [KEY_ID]: publicKey
            })
          ),
          (started) => Effect.promise(() => started.close())
        )
        receiving.down = true
        const running: Array<GatewayProcess> = []
        yield* Effect.addFinalizer(() => Effect.promise(() => Promise.all(running.map((gateway) => gateway.stop()))))

        const first = yield* Effect.promise(() => start(storage, configKey, receiving.url))
        running.push(first)
        // The test writes approvals into the gateway's own database, as another process would.
        const layer = approvalLayerOn(storage, Redacted.make(new Uint8Array(Buffer.from(configKey, "base64"))))
        const requestSome = (count: number) =>
          Effect.gen(function* () {
            const people = yield* newPeople
            for (let index = 0; index < count; index++) {
              pendingOf(yield* requestWrite(people.requester.caller, deployArgs(`2.${index}`)))
            }
          }).pipe(Effect.provide(layer))

        yield* requestSome(3)
        yield* Effect.promise(() => first.waitForLog("approval.archive_failed", 0, 20_000))
        first.child.kill("SIGKILL")
        yield* Effect.promise(() => first.exited)
        yield* requestSome(2)

        receiving.down = false
        const second = yield* Effect.promise(() => start(storage, configKey, receiving.url))
        running.push(second)
        const lines = () => readFileSync(receiving.file, "utf8").split("\n").filter(Boolean)
        yield* Effect.promise(() => waitUntil("the receiver holds 5 entries", () => lines().length === 5))

        const stored = yield* Effect.flatMap(ArchiveRepo, (repo) => repo.lines(1, 100)).pipe(
          Effect.provide(ArchiveRepo.Default.pipe(Layer.provideMerge(layer)))
        )
        expect(lines()).toEqual(stored)
        expect(receiving.refusals).toEqual([])
        const verdict = yield* Effect.promise(() =>
          verifyArchiveFile(receiving.file, new Map([[KEY_ID, publicKey]]), undefined, 1)
        )
        expect(verdict).toMatchObject({ ok: true, entries: 5 })
      }),
    90_000
  )
})
