/**
 * Approval webhooks (src/events/notifier.ts) on SQLite and PostgreSQL, against a real HTTPS receiver
 * (test/support/webhook-receiver.ts) that checks the signature and the timestamp's freshness and
 * deduplicates `event_id`. Backoff and the 10 s limit run on the TestClock; the exchanges are real.
 * Every case ends with the receiver holding exactly the outbox's events, in `seq` order, each once.
 */
import { SqlClient } from "@effect/sql"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Chunk, Clock, Effect, Exit, Layer, Option, Redacted, Ref, Scope, TestClock } from "effect"
import { approvalUrlOf } from "../../src/approvals/answers.js"
import { Notifier, NotifierTest, notifierLayer, retryDelayMs, webhookBody } from "../../src/events/notifier.js"
import { webhookSignature } from "../../src/events/webhook-signature.js"
import { httpsTransport, WEBHOOK_TIMEOUT_MS, type WebhookRequest } from "../../src/events/webhook-transport.js"
import { ApprovalEventRepo, type ApprovalEventRow } from "../../src/store/approval-events.js"
import { NotificationDeliveryRepo } from "../../src/store/notification-deliveries.js"
import {
  approvalIn,
  deployArgs,
  newPeople,
  pendingOf,
  requestWrite,
  sharedApprovalStores
} from "../support/approval-service.js"
import { storeKinds } from "../support/databases.js"
import { LogCapture } from "../support/logs.js"
import { makeTestCa } from "../support/test-ca.js"
import { startWebhookReceiver, type WebhookReceiver } from "../support/webhook-receiver.js"

const stores = sharedApprovalStores()
const ca = makeTestCa()
const otherCa = makeTestCa("not the gateway's CA")
afterAll(async () => {
  await stores.close()
  ca.remove()
  otherCa.remove()
})

const SECRET = "a-webhook-secret-of-at-least-32-bytes!"
const PUBLIC_URL = "https://gw.example.com/mcp"

/** Real time passing (the exchanges are real), while the TestClock stands still. */
const realWait = (ms: number) => Effect.promise(() => new Promise((resolve) => setTimeout(resolve, ms)))

/** Waits (in real time, up to 10 s) until `check` holds. */
const until = (check: () => boolean, what: string) =>
  Effect.gen(function* () {
    for (let waited = 0; waited < 10_000; waited += 20) {
      if (check()) return
      yield* realWait(20)
    }
    throw new Error(`timed out waiting for ${what}`)
  })

/** Waits (in real time, up to 10 s) until `read` finds something. */
const untilSome = <A, E, R>(read: Effect.Effect<Option.Option<A>, E, R>, what: string) =>
  Effect.gen(function* () {
    for (let waited = 0; waited < 10_000; waited += 20) {
      const found = yield* read
      if (Option.isSome(found)) return found.value
      yield* realWait(20)
    }
    throw new Error(`timed out waiting for ${what}`)
  })

/**
 * Moves the TestClock on once the worker has settled (its exchanges and queries are real, so it is
 * given real time to reach its next sleep first).
 */
const advance = (ms: number | string) =>
  Effect.gen(function* () {
    yield* realWait(150)
    // And until something sleeps on the TestClock (the worker's idle poll, a retry's wait, an attempt's
    // timeout): a clock moved before the worker sleeps would leave it sleeping the whole time again. On
    // a loaded machine 150 ms is not always enough for the worker's query that precedes its sleep.
    for (let waited = 0; waited < 10_000 && Chunk.isEmpty(yield* TestClock.sleeps()); waited += 20) {
      yield* realWait(20)
    }
    yield* TestClock.adjust(ms as number)
  })

/** Nothing more happens for a while (real time): the worker is waiting for its clock. */
const stays = (check: () => boolean) => Effect.andThen(realWait(250), () => expect(check()).toBe(true))

const receiverFor = (options: { readonly plain?: boolean; readonly otherCa?: boolean } = {}) =>
  Effect.acquireRelease(
    Effect.promise(() => startWebhookReceiver({ ca: options.otherCa ? otherCa : ca, secret: SECRET, ...options })),
    (receiver) => Effect.promise(() => receiver.close())
  )

/**
 * The notifier over the file's database of `kind`, its delivery state emptied first (as on a database
 * where notifications were just configured), sending to `receiver` with the test CA as `ca_file`.
 */
const startNotifier = (kind: (typeof storeKinds)[number], url: string, scope: Scope.Scope) =>
  Effect.gen(function* () {
    const storage = yield* stores.storage(kind)
    const base = yield* Layer.buildWithScope(stores.open(storage), scope)
    yield* Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      yield* sql`DELETE FROM notification_deliveries`
      yield* sql`DELETE FROM notification_progress`
    }).pipe(Effect.provide(base), Effect.orDie)
    const notifier = notifierLayer({ url, secret: Redacted.make(SECRET), publicUrl: PUBLIC_URL }).pipe(
      Layer.provide(httpsTransport(ca.caPem)),
      Layer.provideMerge(NotificationDeliveryRepo.Default),
      Layer.provideMerge(Layer.succeedContext(base))
    )
    const built = yield* Layer.buildWithScope(notifier, scope)
    // The worker's first look at the outbox (nothing new) before the test writes: it then sleeps on the TestClock.
    yield* realWait(200)
    return built
  })

/** The outbox's events after `seq`, in order. */
const outboxAfter = (seq: number) => Effect.flatMap(ApprovalEventRepo, (events) => events.after(seq, 1000))

/** The receiver holds exactly `events`, once each, in order, with exactly the body the gateway signs. */
const exactlyDelivered = (receiver: WebhookReceiver, events: ReadonlyArray<ApprovalEventRow>) => {
  expect(receiver.events().map((one) => one.raw)).toEqual(events.map((event) => webhookBody(event, PUBLIC_URL)))
  expect(receiver.refused).toEqual([])
}

const startAtNow = TestClock.setTime(Date.now())
const latestSeq = Effect.flatMap(ApprovalEventRepo, (events) => events.latest())

describe("webhook settings", () => {
  it("retries after 5 s, doubling, at most an hour apart; the exchange is bounded by 10 s", () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 30].map(retryDelayMs)).toEqual([
      5_000, 10_000, 20_000, 40_000, 80_000, 160_000, 320_000, 640_000, 1_280_000, 2_560_000, 3_600_000, 3_600_000
    ])
    expect(WEBHOOK_TIMEOUT_MS).toBe(10_000)
  })

  it("the signature is HMAC-SHA256 of timestamp.body with the secret's UTF-8 bytes, as sha256=<hex>", () => {
    // Computed independently: printf '1700000000.{"a":1}' | openssl dgst -sha256 -hmac 'k'
    expect(webhookSignature("k", "1700000000", '{"a":1}')).toBe(
      "sha256=1b6ad1bc9bf48c52ce01939866d5877c6cc4e87ddad27e16673cb8c4964394a3"
    )
  })
})

describe.each(storeKinds)("approval webhooks (%s)", (kind) => {
  it.scoped(
    "a receiver down for a while: retried at 5, 10, 20 s (stored), then everything delivered in order, once, signed",
    () =>
      Effect.gen(function* () {
        yield* startAtNow
        const receiver = yield* receiverFor()
        receiver.mode = "down"
        const scope = yield* Effect.scope
        const logs = new LogCapture()
        const services = yield* logs.capture(startNotifier(kind, receiver.url, scope))
        yield* Effect.gen(function* () {
          const start = yield* latestSeq
          const people = yield* newPeople
          yield* approvalIn(people, "rejected")
          pendingOf(yield* requestWrite(people.requester.caller, deployArgs()))
          const events = yield* outboxAfter(start)
          expect(events.map((event) => event.action)).toEqual(["requested", "rejected", "requested"])
          yield* advance("1 second")
          yield* until(() => receiver.attempts() === 1, "the first attempt")
          const deliveries = yield* NotificationDeliveryRepo
          for (const [attempt, delay] of [
            [1, 5_000],
            [2, 10_000],
            [3, 20_000]
          ] as const) {
            yield* until(() => receiver.attempts() === attempt, `attempt ${attempt}`)
            // The receiver has answered; the worker's write of the failure may still be on its way (a
            // loaded machine, PostgreSQL): wait for the stored attempt rather than a fixed 100 ms.
            const failing = yield* untilSome(
              Effect.map(
                deliveries.failing(events[0]!.seq),
                Option.filter((row) => row.attempts === attempt)
              ),
              `attempt ${attempt} stored`
            )
            expect(failing).toMatchObject({ attempts: attempt, last_error: "http_503" })
            expect(failing.next_attempt_at.getTime() - failing.last_attempt_at.getTime()).toBe(delay)
            if (attempt === 3) break
            const wait = failing.next_attempt_at.getTime() - (yield* Clock.currentTimeMillis)
            yield* advance(wait - 100)
            yield* stays(() => receiver.attempts() === attempt)
            yield* advance(100)
          }
          const report = yield* (yield* Notifier).report
          expect(report).toMatchObject({ enabled: true, pending: 3, failed: 1, last_error: "http_503" })
          receiver.mode = "accept"
          yield* advance(20_000)
          yield* until(() => receiver.events().length === 3, "all three delivered")
          exactlyDelivered(receiver, events)
          const first = receiver.events()[0]!
          expect(Object.keys(first.body)).toEqual(["event_id", "approval_id", "action", "approval_url", "expires_at"])
          expect(first.body["approval_url"]).toBe(approvalUrlOf(PUBLIC_URL, events[0]!.approval_id))
          yield* realWait(100)
          expect(yield* (yield* Notifier).report).toMatchObject({ pending: 0, failed: 0, last_error: null })
          // Logged when the failure started and when it ended: not once per retry; never the secret or body.
          expect(logs.events("notification.delivery_failed")).toHaveLength(1)
          expect(logs.events("notification.delivery_failed")[0]).toMatchObject({ error: "http_503", attempts: 1 })
          expect(logs.events("notification.delivery_recovered")).toHaveLength(1)
          expect(logs.text()).not.toContain(SECRET)
          expect(logs.text()).not.toContain(first.raw)
        }).pipe(Effect.provide(services))
      })
  )

  it.scoped("a redirect is never followed: the event waits for a 2xx from the configured address", () =>
    Effect.gen(function* () {
      yield* startAtNow
      const receiver = yield* receiverFor()
      receiver.mode = "redirect"
      const services = yield* startNotifier(kind, receiver.url, yield* Effect.scope)
      yield* Effect.gen(function* () {
        const start = yield* latestSeq
        pendingOf(yield* requestWrite((yield* newPeople).requester.caller, deployArgs()))
        const events = yield* outboxAfter(start)
        yield* advance("1 second")
        yield* until(() => receiver.attempts() === 1, "the first attempt")
        expect(receiver.refused).toEqual([])
        expect(
          yield* untilSome((yield* NotificationDeliveryRepo).failing(events[0]!.seq), "the failure stored")
        ).toMatchObject({
          last_error: "http_302"
        })
        receiver.mode = "accept"
        yield* advance(5_000)
        yield* until(() => receiver.events().length === 1, "the delivery")
        exactlyDelivered(receiver, events)
        expect(receiver.attempts()).toBe(2)
      }).pipe(Effect.provide(services))
    })
  )

  it.scoped("a receiver slower than 10 s: the attempt is abandoned at 10 s and retried 5 s later", () =>
    Effect.gen(function* () {
      yield* startAtNow
      const receiver = yield* receiverFor()
      receiver.mode = "hang"
      const services = yield* startNotifier(kind, receiver.url, yield* Effect.scope)
      yield* Effect.gen(function* () {
        const start = yield* latestSeq
        pendingOf(yield* requestWrite((yield* newPeople).requester.caller, deployArgs()))
        const events = yield* outboxAfter(start)
        const deliveries = yield* NotificationDeliveryRepo
        yield* advance("1 second")
        yield* until(() => receiver.attempts() === 1, "the first attempt")
        yield* advance(WEBHOOK_TIMEOUT_MS - 1)
        yield* realWait(200)
        expect(Option.isNone(yield* deliveries.failing(events[0]!.seq))).toBe(true)
        yield* advance(1)
        expect(yield* untilSome(deliveries.failing(events[0]!.seq), "the timeout stored")).toMatchObject({
          last_error: "timeout"
        })
        receiver.mode = "accept"
        yield* advance(5_000)
        yield* until(() => receiver.events().length === 1, "the delivery")
        exactlyDelivered(receiver, events)
      }).pipe(Effect.provide(services))
    })
  )

  it.scoped("a lost receipt: the event is delivered again with the same event_id, and the receiver keeps it once", () =>
    Effect.gen(function* () {
      yield* startAtNow
      const receiver = yield* receiverFor()
      receiver.mode = "lose_receipt"
      const services = yield* startNotifier(kind, receiver.url, yield* Effect.scope)
      yield* Effect.gen(function* () {
        const start = yield* latestSeq
        const people = yield* newPeople
        pendingOf(yield* requestWrite(people.requester.caller, deployArgs()))
        pendingOf(yield* requestWrite(people.requester.caller, deployArgs()))
        const events = yield* outboxAfter(start)
        yield* advance("1 second")
        yield* until(() => receiver.received.length === 1, "the first delivery")
        receiver.mode = "accept"
        yield* realWait(100)
        yield* advance(5_000)
        yield* until(() => receiver.events().length === 2, "both events")
        expect(receiver.received.map((one) => [one.eventId, one.duplicate])).toEqual([
          [events[0]!.event_id, false],
          [events[0]!.event_id, true],
          [events[1]!.event_id, false]
        ])
        exactlyDelivered(receiver, events)
      }).pipe(Effect.provide(services))
    })
  )

  it.scoped(
    "a receiver with a certificate the gateway does not trust, or speaking plain HTTP, gets nothing: refused and retried",
    () =>
      Effect.gen(function* () {
        yield* startAtNow
        const untrusted = yield* receiverFor({ otherCa: true })
        const plain = yield* receiverFor({ plain: true })
        const scope = yield* Effect.scope
        for (const [receiver, url] of [
          [untrusted, untrusted.url],
          [plain, plain.url]
        ] as const) {
          const services = yield* startNotifier(kind, url, scope)
          yield* Effect.gen(function* () {
            const start = yield* latestSeq
            pendingOf(yield* requestWrite((yield* newPeople).requester.caller, deployArgs()))
            const [event] = yield* outboxAfter(start)
            const deliveries = yield* NotificationDeliveryRepo
            yield* advance("1 second")
            for (let attempt = 1; attempt <= 2; attempt++) {
              const failing = yield* untilSome(
                Effect.map(
                  deliveries.failing(event!.seq),
                  Option.filter((row) => row.attempts === attempt)
                ),
                `attempt ${attempt} stored`
              )
              expect(failing.attempts).toBe(attempt)
              expect(failing.last_error).toBe("tls")
              yield* advance(retryDelayMs(attempt))
            }
            // The plain server never saw a request: the TLS handshake failed before anything was sent.
            expect(receiver.received).toEqual([])
            expect(receiver.attempts()).toBe(0)
          }).pipe(Effect.provide(services))
        }
      })
  )

  it.scoped("a restart mid-retry neither hurries, loses nor reorders: the stored next attempt holds", () =>
    Effect.gen(function* () {
      yield* startAtNow
      const receiver = yield* receiverFor()
      receiver.mode = "down"
      const first = yield* Scope.make()
      const services = yield* startNotifier(kind, receiver.url, first)
      const events = yield* Effect.gen(function* () {
        const start = yield* latestSeq
        const people = yield* newPeople
        for (let index = 0; index < 3; index++) pendingOf(yield* requestWrite(people.requester.caller, deployArgs()))
        yield* advance("1 second")
        yield* until(() => receiver.attempts() === 1, "the first attempt")
        yield* advance(5_000)
        yield* until(() => receiver.attempts() === 2, "the second attempt")
        yield* realWait(100)
        return yield* outboxAfter(start)
      }).pipe(Effect.provide(services))
      yield* Scope.close(first, Exit.void)
      receiver.mode = "accept"
      // A new notifier on the same database, its progress and failure record kept (not reset).
      const storage = yield* stores.storage(kind)
      const again = yield* Layer.buildWithScope(
        notifierLayer({ url: receiver.url, secret: Redacted.make(SECRET), publicUrl: PUBLIC_URL }).pipe(
          Layer.provide(httpsTransport(ca.caPem)),
          Layer.provideMerge(NotificationDeliveryRepo.Default),
          Layer.provideMerge(stores.open(storage))
        ),
        yield* Effect.scope
      )
      const [head] = events
      const stored = yield* Effect.flatMap(NotificationDeliveryRepo, (deliveries) =>
        deliveries.failing(head!.seq)
      ).pipe(Effect.provide(again))
      const wait = Option.getOrThrow(stored).next_attempt_at.getTime() - (yield* Clock.currentTimeMillis)
      expect(wait).toBeGreaterThan(1_000)
      yield* advance(wait - 200)
      yield* stays(() => receiver.attempts() === 2)
      yield* advance(200)
      yield* until(() => receiver.events().length === 3, "all three")
      exactlyDelivered(receiver, events)
      expect(again).toBeDefined()
    })
  )

  it.scoped("events committed before notifications were configured are never sent; later ones are", () =>
    Effect.gen(function* () {
      yield* startAtNow
      const receiver = yield* receiverFor()
      const storage = yield* stores.storage(kind)
      const people = yield* newPeople.pipe(Effect.provide(stores.layer(kind)))
      yield* Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        yield* sql`DELETE FROM notification_deliveries`
        yield* sql`DELETE FROM notification_progress`
        pendingOf(yield* requestWrite(people.requester.caller, deployArgs()))
      }).pipe(Effect.provide(stores.open(storage)))
      const services = yield* Layer.buildWithScope(
        notifierLayer({ url: receiver.url, secret: Redacted.make(SECRET), publicUrl: PUBLIC_URL }).pipe(
          Layer.provide(httpsTransport(ca.caPem)),
          Layer.provideMerge(NotificationDeliveryRepo.Default),
          Layer.provideMerge(stores.open(storage))
        ),
        yield* Effect.scope
      )
      yield* Effect.gen(function* () {
        yield* realWait(200)
        const start = yield* latestSeq
        pendingOf(yield* requestWrite(people.requester.caller, deployArgs()))
        const events = yield* outboxAfter(start)
        yield* advance("1 second")
        yield* until(() => receiver.events().length === 1, "the later event")
        yield* stays(() => receiver.attempts() === 1)
        exactlyDelivered(receiver, events)
      }).pipe(Effect.provide(services))
    })
  )
})

describe.each(storeKinds)("NotifierTest (%s)", (kind) => {
  it.scoped("records exactly what the worker would send, signed, in order", () =>
    Effect.gen(function* () {
      yield* startAtNow
      const storage = yield* stores.storage(kind)
      const base = yield* Layer.buildWithScope(stores.open(storage), yield* Effect.scope)
      yield* Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        yield* sql`DELETE FROM notification_deliveries`
        yield* sql`DELETE FROM notification_progress`
      }).pipe(Effect.provide(base), Effect.orDie)
      const sent = yield* Ref.make<ReadonlyArray<WebhookRequest>>([])
      const services = yield* Layer.buildWithScope(
        NotifierTest(
          { url: "https://hooks.example.com/x", secret: Redacted.make(SECRET), publicUrl: PUBLIC_URL },
          sent
        ).pipe(Layer.provideMerge(NotificationDeliveryRepo.Default), Layer.provideMerge(Layer.succeedContext(base))),
        yield* Effect.scope
      )
      yield* realWait(200)
      yield* Effect.gen(function* () {
        const start = yield* latestSeq
        yield* approvalIn(yield* newPeople, "rejected")
        const events = yield* outboxAfter(start)
        yield* advance("1 second")
        yield* until(() => Effect.runSync(Ref.get(sent)).length === 2, "two recorded deliveries")
        const recorded = yield* Ref.get(sent)
        expect(recorded.map((one) => one.body)).toEqual(events.map((event) => webhookBody(event, PUBLIC_URL)))
        for (const one of recorded) {
          expect(one.url).toBe("https://hooks.example.com/x")
          expect(one.headers["x-gateway-signature"]).toBe(
            webhookSignature(SECRET, one.headers["x-gateway-timestamp"]!, one.body)
          )
        }
      }).pipe(Effect.provide(services))
    })
  )
})
