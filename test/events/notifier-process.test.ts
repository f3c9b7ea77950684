/**
 * Approval webhooks across a gateway process killed with SIGKILL while an event waits for its retry
 * (docs/approvals.md, "Webhooks"): the restarted process keeps the stored next attempt (it does not
 * send sooner), loses nothing and sends in order — on SQLite and PostgreSQL. The events come from real
 * approval requests written by this test process to the gateway's database, as the gateway would.
 */
import { Effect, Exit, Layer, Redacted, Scope } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { ApprovalEventRepo } from "../../src/store/approval-events.js"
import { approvalLayerOn, deployArgs, newPeople, pendingOf, requestWrite } from "../support/approval-service.js"
import { type StoreKindUnderTest, storeKinds, withStorage } from "../support/databases.js"
import { freePort, type GatewayProcess, newConfigKey, startGateway } from "../support/gateway-process.js"
import { makeTestCa } from "../support/test-ca.js"
import { startWebhookReceiver } from "../support/webhook-receiver.js"

const ca = makeTestCa()
afterAll(() => ca.remove())
const SECRET = "the-process-test-webhook-secret-0123456789"

const until = async (check: () => boolean, what: string, timeoutMs = 20_000) => {
  const start = Date.now()
  while (!check()) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}

describe.each(storeKinds)("approval webhooks across SIGKILL (%s)", (kind: StoreKindUnderTest) => {
  it("a gateway killed mid-retry resumes at the stored time: nothing lost, reordered or sent early", async () => {
    const receiver = await startWebhookReceiver({ ca, secret: SECRET })
    receiver.mode = "down"
    const keyText = newConfigKey()
    const key = Redacted.make(new Uint8Array(Buffer.from(keyText, "base64")))
    const storageScope = Effect.runSync(Scope.make())
    const storage = await Effect.runPromise(Scope.extend(withStorage(kind), storageScope))
    const port = await freePort()
    const storageYaml =
      storage.type === "sqlite"
        ? `{ type: sqlite, path: "${storage.path}" }`
        : `{ type: postgres, url: "${Redacted.value(storage.url)}" }`
    const adminPort = await freePort()
    const text = `
server: { listen: "127.0.0.1:${port}", public_url: "http://127.0.0.1:${port}/mcp" }
auth: { issuer: "http://127.0.0.1:${port}/sso" }
storage: ${storageYaml}
admin:
  listen: "127.0.0.1:${adminPort}"
  approvals:
    notifications: { url: "${receiver.url}", secret: "${SECRET}", ca_file: "${ca.caFile}" }
`
    const env = { GATEWAY_CONFIG_KEY: keyText }
    let gateway: GatewayProcess | undefined = await startGateway({ port, env, config: () => text })
    try {
      // Three real approval requests, written to the gateway's database by this process.
      const events = await Effect.runPromise(
        Effect.scoped(
          Effect.gen(function* () {
            const services = yield* Layer.build(approvalLayerOn(storage, key))
            return yield* Effect.gen(function* () {
              const start = yield* (yield* ApprovalEventRepo).latest()
              const people = yield* newPeople
              for (let index = 0; index < 3; index++)
                pendingOf(yield* requestWrite(people.requester.caller, deployArgs()))
              return yield* (yield* ApprovalEventRepo).after(start, 100)
            }).pipe(Effect.provide(services))
          })
        )
      )
      expect(events.map((event) => event.action)).toEqual(["requested", "requested", "requested"])
      await gateway.waitForLog("notification.delivery_failed")
      const failedAt = receiver.arrivals[0]!
      gateway.child.kill("SIGKILL")
      await gateway.exited
      receiver.mode = "accept"
      gateway = await startGateway({ port, env, config: () => text })
      await until(() => receiver.events().length === 3, "all three events after the restart")
      // The second attempt waited for the stored time (5 s after the failed one), restart or not.
      expect(receiver.arrivals[1]! - failedAt).toBeGreaterThanOrEqual(4_900)
      expect(receiver.events().map((one) => one.eventId)).toEqual(events.map((event) => event.event_id))
      expect(receiver.received.filter((one) => one.duplicate)).toEqual([])
      expect(receiver.refused).toEqual([])
      expect(gateway.stderr()).not.toContain(SECRET)
    } finally {
      await gateway?.stop()
      await receiver.close()
      await Effect.runPromise(Scope.close(storageScope, Exit.void))
    }
  }, 60_000)
})
