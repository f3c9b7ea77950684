import { type Agent, request } from "node:https"
import { Effect } from "effect"
import { failureClass } from "../delivery-agent.js"

/**
 * Sends one archive envelope (docs/audit-archive.md, "Shipping"): a POST over HTTPS with the stored line
 * as the body, the certificate and host name always verified (against `ca`, the `ca_file` certificates,
 * instead of the system roots when given), redirects never followed. Acknowledged only by a 2xx whose
 * body is the receipt `{"sequence": <n>, "hash": "<hex>"}` of exactly this entry; anything else is a
 * failure with its class, which is what logs and the delivery status show (never the answer's body).
 * Entries go over one kept-alive connection (`deliveryAgent`, src/events/delivery-agent.ts), whose
 * verification settings they take, so a backlog does not pay a TLS handshake per entry.
 */

export type ShipOutcome = { readonly _tag: "Acknowledged" } | { readonly _tag: "Failed"; readonly errorClass: string }

/** The whole exchange, connection and answer included. */
export const ARCHIVE_TIMEOUT_MS = 10_000
/** A receipt is a few dozen bytes: an answer longer than this is not one. */
const MAX_RECEIPT_BYTES = 4096

const failed = (errorClass: string): ShipOutcome => ({ _tag: "Failed", errorClass })

/** Whether `body` is the receipt of (`sequence`, `hash`): the class of the failure, or undefined. */
export const receiptProblem = (body: string, sequence: number, hash: string): string | undefined => {
  let receipt: unknown
  try {
    receipt = JSON.parse(body)
  } catch {
    return "receipt_invalid"
  }
  if (typeof receipt !== "object" || receipt === null) return "receipt_invalid"
  const fields = receipt as { readonly sequence?: unknown; readonly hash?: unknown }
  return fields.sequence === sequence && fields.hash === hash ? undefined : "receipt_mismatch"
}

/** Errors of a kept-alive connection the receiver closed just as it was used again: nothing was answered. */
const STALE_CONNECTION = new Set(["ECONNRESET", "EPIPE"])

export const shipEnvelope = (
  url: string,
  envelope: string,
  sequence: number,
  hash: string,
  agent: Agent
): Effect.Effect<ShipOutcome> =>
  sendOnce(url, envelope, sequence, hash, agent).pipe(
    // A connection kept alive may have been closed by the receiver meanwhile (its idle timeout): the entry
    // goes once more, at once, on a new one, rather than waiting for the retry as if the receiver were down.
    Effect.flatMap((sent) =>
      sent === "stale" ? sendOnce(url, envelope, sequence, hash, agent) : Effect.succeed(sent)
    ),
    Effect.map((sent): ShipOutcome => (sent === "stale" ? failed("connect") : sent)),
    Effect.timeoutTo({
      duration: ARCHIVE_TIMEOUT_MS,
      onTimeout: () => failed("timeout"),
      onSuccess: (outcome: ShipOutcome) => outcome
    })
  )

const sendOnce = (
  url: string,
  envelope: string,
  sequence: number,
  hash: string,
  agent: Agent
): Effect.Effect<ShipOutcome | "stale"> =>
  Effect.async<ShipOutcome | "stale">((resume, signal) => {
    const outgoing = request(
      url,
      {
        method: "POST",
        headers: { "content-type": "application/json", "content-length": String(Buffer.byteLength(envelope)) },
        signal,
        agent
      },
      (incoming) => {
        const status = incoming.statusCode ?? 0
        const chunks: Array<Buffer> = []
        let size = 0
        incoming.on("data", (chunk: Buffer) => {
          size += chunk.length
          if (size > MAX_RECEIPT_BYTES) incoming.destroy()
          else chunks.push(chunk)
        })
        incoming.once("end", () => {
          if (status < 200 || status >= 300) return resume(Effect.succeed(failed(`http_${status}`)))
          const problem = receiptProblem(Buffer.concat(chunks).toString("utf8"), sequence, hash)
          resume(Effect.succeed(problem === undefined ? { _tag: "Acknowledged" } : failed(problem)))
        })
        incoming.once("close", () => {
          if (!incoming.complete)
            resume(Effect.succeed(failed(size > MAX_RECEIPT_BYTES ? "receipt_invalid" : "connect")))
        })
      }
    )
    outgoing.once("error", (error: NodeJS.ErrnoException) => {
      if (signal.aborted) return
      const stale = outgoing.reusedSocket && STALE_CONNECTION.has(error.code ?? "")
      resume(Effect.succeed(stale ? "stale" : failed(failureClass(error))))
    })
    outgoing.end(envelope)
  })
