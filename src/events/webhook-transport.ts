import { type Agent, request } from "node:https"
import { Context, Effect, Layer, Ref } from "effect"
import { deliveryAgent, failureClass } from "./delivery-agent.js"

/** One signed delivery, exactly as it goes out. */
export interface WebhookRequest {
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  /** The exact bytes the signature covers. */
  readonly body: string
}

/**
 * How a delivery ended. `delivered`: a 2xx. Otherwise the class of the failure, which is what logs,
 * the review page and the delivery status show (never the answer's body):
 * `http_<status>` (a 3xx is never followed), `timeout`, `tls` (certificate or handshake refused),
 * `connect` (refused, unreachable, reset), `dns`.
 */
export type WebhookOutcome = { readonly _tag: "Delivered" } | { readonly _tag: "Failed"; readonly errorClass: string }

/** The whole exchange, connection and answer included, is bounded by this (docs/approvals.md). */
export const WEBHOOK_TIMEOUT_MS = 10_000

/** Sends one webhook. The live transport is HTTPS; tests may record instead (`recordingTransport`). */
export class WebhookTransport extends Context.Tag("gateway/WebhookTransport")<
  WebhookTransport,
  { readonly send: (delivery: WebhookRequest) => Effect.Effect<WebhookOutcome> }
>() {}

/**
 * One POST over HTTPS: certificate and host name always verified (against `ca`, the `ca_file`
 * certificates, instead of the system roots when given; NODE_TLS_REJECT_UNAUTHORIZED cannot turn it
 * off), redirects never followed, a 2xx acknowledges. The answer's body is read and dropped (at most
 * 64 KiB counted): it means nothing here. Interrupting the Effect aborts the exchange.
 */
export const postWebhook = (delivery: WebhookRequest, agent: Agent): Effect.Effect<WebhookOutcome> =>
  Effect.async<WebhookOutcome>((resume, signal) => {
    const outgoing = request(
      delivery.url,
      {
        method: "POST",
        headers: { ...delivery.headers, "content-length": String(Buffer.byteLength(delivery.body)) },
        signal,
        agent
      },
      (incoming) => {
        const status = incoming.statusCode ?? 0
        let size = 0
        incoming.on("data", (chunk: Buffer) => {
          size += chunk.length
          if (size > 65_536) incoming.destroy()
        })
        const done = () =>
          resume(
            Effect.succeed(
              status >= 200 && status < 300
                ? ({ _tag: "Delivered" } as const)
                : ({ _tag: "Failed", errorClass: `http_${status}` } as const)
            )
          )
        incoming.once("end", done)
        incoming.once("close", done)
        incoming.once("error", () => resume(Effect.succeed({ _tag: "Failed", errorClass: "connect" } as const)))
      }
    )
    outgoing.once("error", (error: NodeJS.ErrnoException) => {
      if (!signal.aborted) resume(Effect.succeed({ _tag: "Failed", errorClass: failureClass(error) } as const))
    })
    outgoing.end(delivery.body)
  })

/**
 * The HTTPS transport, bounded by `timeoutMs` (the Effect clock: TestClock drives it in tests), over
 * the outbox's one kept-alive connection (`deliveryAgent`), whose verification settings it takes.
 */
export const httpsTransport = (ca: string | undefined, timeoutMs = WEBHOOK_TIMEOUT_MS) =>
  Layer.scoped(
    WebhookTransport,
    Effect.map(
      Effect.acquireRelease(
        Effect.sync(() => deliveryAgent(ca)),
        (agent) => Effect.sync(() => agent.destroy())
      ),
      (agent) => ({
        send: (delivery: WebhookRequest) =>
          postWebhook(delivery, agent).pipe(
            Effect.timeoutTo({
              duration: timeoutMs,
              onTimeout: () => ({ _tag: "Failed", errorClass: "timeout" }) as const,
              onSuccess: (outcome: WebhookOutcome) => outcome
            })
          )
      })
    )
  )

/** A transport that sends nothing and records every delivery; every one is acknowledged. */
export const recordingTransport = (sent: Ref.Ref<ReadonlyArray<WebhookRequest>>) =>
  Layer.succeed(WebhookTransport, {
    send: (delivery) => Ref.update(sent, (all) => [...all, delivery]).pipe(Effect.as({ _tag: "Delivered" } as const))
  })
