import { Clock, Context, Duration, Effect, Layer, Option, Redacted, type Ref } from "effect"
import { approvalUrlOf } from "../approvals/answers.js"
import { readCaBundle } from "../bearer/external-jwks-fetch.js"
import type { GatewayConfig } from "../config/schema.js"
import { ApprovalEventRepo, type ApprovalEventRow } from "../store/approval-events.js"
import { storeFailureOr } from "../store/health.js"
import { type FailingDelivery, NotificationDeliveryRepo } from "../store/notification-deliveries.js"
import { version } from "../version.js"
import type { DeliveryReport } from "./delivery-status.js"
import { EventLimiter, securityEvent } from "./security-log.js"
import { webhookSignature } from "./webhook-signature.js"
import { httpsTransport, recordingTransport, type WebhookRequest, WebhookTransport } from "./webhook-transport.js"

/** What the notifier needs of `admin.approvals.notifications` and `server`. */
export interface NotifierSettings {
  readonly url: string
  readonly secret: Redacted.Redacted<string>
  /** `server.public_url`: the review page's address is derived from it. */
  readonly publicUrl: string
}

/** First retry after 5 s, then doubling, never more than an hour apart (docs/approvals.md, "Retries"). */
export const FIRST_RETRY_MS = 5_000
export const LONGEST_RETRY_MS = 60 * 60_000
export const retryDelayMs = (attempts: number): number =>
  Math.min(FIRST_RETRY_MS * 2 ** Math.min(Math.max(attempts - 1, 0), 20), LONGEST_RETRY_MS)

/** How often an idle worker looks for new events. */
export const IDLE_POLL = Duration.seconds(1)
/** Events read per query while a backlog drains. */
const BATCH = 200
/** Deliveries acknowledged in one write at most (what a crash may make the receiver see twice). */
const ACK_EVERY = 50

/** The webhook body: exactly these five fields, in this order (docs/approvals.md, "Body"). */
export const webhookBody = (event: ApprovalEventRow, publicUrl: string): string =>
  JSON.stringify({
    event_id: event.event_id,
    approval_id: event.approval_id,
    action: event.action,
    approval_url: approvalUrlOf(publicUrl, event.approval_id),
    expires_at: event.expires_at.toISOString()
  })

export interface NotifierService {
  readonly enabled: boolean
  /** Delivery figures for `GET /api/v1/approvals/delivery`. */
  readonly report: Effect.Effect<DeliveryReport>
  /** The failing deliveries of one approval's events (the review page flags them). */
  readonly failuresOf: (approvalId: string) => Effect.Effect<ReadonlyArray<FailingDelivery>>
}

/**
 * Approval webhooks (docs/approvals.md, "Webhooks"): one worker sends the outbox's events to
 * `admin.approvals.notifications.url`, strictly in `seq` order, each signed, retrying the one at the
 * head with stored backoff until the receiver acknowledges it with a 2xx. Process-wide (its
 * configuration is static); the worker's life is its layer's.
 */
export class Notifier extends Context.Tag("gateway/Notifier")<Notifier, NotifierService>() {}

const disabled: NotifierService = {
  enabled: false,
  report: Effect.succeed({ enabled: false, pending: 0, failed: 0, oldest_pending_age_seconds: null, last_error: null }),
  failuresOf: () => Effect.succeed([])
}

/** The figures of the queue: everything after `delivered_through` is pending (seq has no gaps). */
const reportOf = (events: ApprovalEventRepo, deliveries: NotificationDeliveryRepo) =>
  Effect.gen(function* () {
    const at = yield* Clock.currentTimeMillis
    const through = Option.getOrElse(yield* deliveries.deliveredThrough(), () => 0)
    const latest = yield* events.latest()
    const [head] = yield* events.after(through, 1)
    const failures = yield* deliveries.failures()
    return {
      enabled: true,
      pending: Math.max(0, latest - through),
      failed: failures.count,
      oldest_pending_age_seconds:
        head === undefined ? null : Math.max(0, Math.floor((at - head.occurred_at.getTime()) / 1000)),
      last_error: Option.match(failures.head, { onNone: () => null, onSome: (failing) => failing.last_error })
    } satisfies DeliveryReport
  })

/** The worker, from the event after `startAfter` on: runs until its scope closes. */
const deliver = (settings: NotifierSettings, startAfter: number) =>
  Effect.gen(function* () {
    const events = yield* ApprovalEventRepo
    const deliveries = yield* NotificationDeliveryRepo
    const transport = yield* WebhookTransport
    const secret = Redacted.value(settings.secret)
    const limiter = new EventLimiter()
    // The failure class last logged: a failure is logged when it starts or changes, not per retry.
    let logged: string | undefined
    const logLimited = (event: string, fields: Readonly<Record<string, unknown>>) =>
      Effect.flatMap(Clock.currentTimeMillis, (ms) => {
        const suppressed = limiter.admit(event, ms)
        return suppressed === undefined
          ? Effect.void
          : securityEvent(event, suppressed > 0 ? { ...fields, suppressed } : fields)
      })

    let through = startAfter

    /** One attempt at `event`; true when acknowledged. */
    const attempt = (event: ApprovalEventRow, failed: Option.Option<FailingDelivery>) =>
      Effect.gen(function* () {
        const at = yield* Clock.currentTimeMillis
        const body = webhookBody(event, settings.publicUrl)
        const timestamp = String(Math.floor(at / 1000))
        const outcome = yield* transport.send({
          url: settings.url,
          headers: {
            "content-type": "application/json",
            "user-agent": `gateway/${version}`,
            "x-gateway-timestamp": timestamp,
            "x-gateway-signature": webhookSignature(secret, timestamp, body)
          },
          body
        })
        const fields = {
          seq: event.seq,
          event_id: event.event_id,
          approval_id: event.approval_id,
          action: event.action
        }
        if (outcome._tag === "Delivered") {
          // A failed event's record goes at once; first-time deliveries are acknowledged in runs (`flush`).
          if (Option.isSome(failed)) {
            yield* deliveries.acknowledge(event.seq)
            acked = event.seq
          }
          if (Option.isSome(failed) || logged !== undefined) {
            yield* logLimited("notification.delivery_recovered", {
              ...fields,
              attempts: Option.match(failed, { onNone: () => 1, onSome: (row) => row.attempts + 1 })
            })
            logged = undefined
          }
          return true
        }
        const attempts = Option.match(failed, { onNone: () => 1, onSome: (row) => row.attempts + 1 })
        // Counted from when the attempt ended: a 10 s timeout is not part of the 5 s wait.
        const ended = yield* Clock.currentTimeMillis
        const next = new Date(ended + retryDelayMs(attempts))
        yield* deliveries.recordFailure({
          seq: event.seq,
          eventId: event.event_id,
          approvalId: event.approval_id,
          attempts,
          at: new Date(ended),
          nextAttemptAt: next,
          errorClass: outcome.errorClass
        })
        if (logged !== outcome.errorClass) {
          logged = outcome.errorClass
          yield* logLimited("notification.delivery_failed", {
            ...fields,
            attempts,
            error: outcome.errorClass,
            next_attempt_at: next.toISOString()
          })
        }
        return false
      })

    /**
     * Progress is written for a run of deliveries at once (at most `ACK_EVERY`, and whenever the worker
     * stops to wait or fails): one write per run instead of one per event, sharing the database's writer
     * with the approvals less. After a crash the unwritten tail of a run is sent again — receivers
     * dedupe `event_id` anyway, as for a lost receipt.
     */
    let acked = through
    const flush = Effect.suspend(() => {
      if (through <= acked) return Effect.void
      const upTo = through
      return Effect.tap(deliveries.acknowledge(upTo), () => {
        acked = upTo
      })
    })

    const round = Effect.gen(function* () {
      const batch = yield* events.after(through, BATCH)
      if (batch.length === 0) return yield* Effect.zipRight(flush, Effect.sleep(IDLE_POLL))
      for (const event of batch) {
        // Only the head can have failed before (order is strict); later ones are first attempts.
        const failed = event === batch[0] ? yield* deliveries.failing(event.seq) : Option.none()
        if (Option.isSome(failed)) {
          const wait = failed.value.next_attempt_at.getTime() - (yield* Clock.currentTimeMillis)
          // The stored time holds across restarts: nothing is sent before it.
          if (wait > 0) return yield* Effect.zipRight(flush, Effect.sleep(Duration.millis(wait)))
        }
        if (!(yield* attempt(event, failed))) return yield* flush
        through = event.seq
        if (through - acked >= ACK_EVERY) yield* flush
      }
      yield* flush
    })
    // A failed round is tried again shortly: for lack of the store (the database restarting, say) it
    // counts in the store's outage; anything else is logged with its cause.
    return yield* round.pipe(
      Effect.catchAllCause((cause) =>
        Effect.zipRight(
          storeFailureOr(
            cause,
            Effect.logWarning("notification.worker_failed", cause).pipe(
              Effect.annotateLogs({ event: "notification.worker_failed" })
            )
          ),
          Effect.sleep(FIRST_RETRY_MS)
        )
      ),
      Effect.forever
    )
  })

/** The notifier over `transport`: the worker forked in the layer's scope, and its figures. */
export const notifierLayer = (
  settings: NotifierSettings
): Layer.Layer<Notifier, never, ApprovalEventRepo | NotificationDeliveryRepo | WebhookTransport> =>
  Layer.scoped(
    Notifier,
    Effect.gen(function* () {
      const events = yield* ApprovalEventRepo
      const deliveries = yield* NotificationDeliveryRepo
      // Where delivery starts is settled before the layer is up: events committed after it are sent.
      const startAfter = yield* deliveries.start(new Date(yield* Clock.currentTimeMillis))
      yield* Effect.forkScoped(deliver(settings, startAfter))
      return {
        enabled: true,
        report: reportOf(events, deliveries),
        failuresOf: (approvalId) => deliveries.failingOf(approvalId)
      } satisfies NotifierService
    })
  )

/**
 * The notifier `admin.approvals.notifications` asks for: HTTPS with the `ca_file` certificates (read
 * at start: a bad file stops the start, naming the key), or none when it is not configured.
 */
export const NotifierLive = (config: GatewayConfig) => {
  const notifications = config.admin.approvals.notifications
  if (notifications === undefined) return Layer.succeed(Notifier, disabled)
  const transport = Layer.unwrapEffect(
    Effect.map(
      notifications.ca_file === undefined
        ? Effect.succeed(undefined)
        : readCaBundle(notifications.ca_file, "admin.approvals.notifications.ca_file"),
      (ca) => httpsTransport(ca)
    )
  )
  return notifierLayer({
    url: notifications.url,
    secret: notifications.secret,
    publicUrl: config.server.public_url
  }).pipe(Layer.provide(transport))
}

/**
 * For tests of other services: the real worker over the real store, with a transport that sends
 * nothing, records every delivery in `sent` (exactly as it would go out) and acknowledges it.
 */
export const NotifierTest = (settings: NotifierSettings, sent: Ref.Ref<ReadonlyArray<WebhookRequest>>) =>
  notifierLayer(settings).pipe(Layer.provide(recordingTransport(sent)))
