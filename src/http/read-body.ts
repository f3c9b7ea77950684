import { isUtf8 } from "node:buffer"
import type { IncomingMessage } from "node:http"
import { HttpServerRequest } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Data, Effect } from "effect"
import type { Cancellation } from "../runtime/cancellation.js"

/**
 * Why a body could not be read: larger than allowed, broken off (the client left, an error), or not
 * UTF-8 — every body the gateway reads is JSON (RFC 8259 §8.1: UTF-8) or a form of ASCII, and text with
 * bytes replaced by U+FFFD would be stored and forwarded other than it was sent.
 */
export class BodyNotRead extends Data.TaggedError("BodyNotRead")<{
  readonly reason: "too_large" | "unreadable" | "not_utf8"
}> {}

/** What a request answers when its body is not UTF-8. */
export const notUtf8Description = "The request body is not valid UTF-8."

// ASCII is UTF-8 already; an empty value names nothing.
const readable: ReadonlySet<string> = new Set(["utf-8", "utf8", "us-ascii", "ascii", ""])

/**
 * Why a `Content-Type` naming a charset is refused (a body is read as UTF-8 only, and one sent in
 * another charset would be misread), or undefined: no charset, UTF-8 however spelled, or US-ASCII.
 */
export const charsetProblem = (contentType: string | undefined): string | undefined => {
  // Every `charset` in the header, wherever it stands (a second one, one inside another parameter's
  // quoted value, RFC 2231's `charset*`): a proxy in front may read any of them.
  for (const found of (contentType ?? "").matchAll(/charset(\*?)\s*=\s*("[^"]*"?|[^;]*)/gi)) {
    const value = found[2]!.trim().replace(/^"|"$/g, "").trim().toLowerCase()
    if (found[1] === "*") return "the body is read as UTF-8 only (charset* given)"
    if (!readable.has(value)) return `the body is read as UTF-8 only (charset=${value.slice(0, 40)} given)`
  }
  return undefined
}

/**
 * A request body as text, at most `maxBytes` (refused while reading, never buffered past the limit).
 * Every route reads bodies through this: it never destroys the request, so whatever ends the read —
 * the limit, `request_timeout`, the generation closing (`signal`) — the request can still be answered
 * with the gateway's error body; the listener then closes the connection instead of waiting for the
 * rest (src/runtime/connection-gate.ts).
 */
export const readBodyText = (incoming: IncomingMessage, maxBytes: number, signal?: Cancellation): Promise<string> =>
  new Promise((resolve, reject) => {
    if (Number(incoming.headers["content-length"] ?? 0) > maxBytes) {
      return reject(new BodyNotRead({ reason: "too_large" }))
    }
    if (signal?.aborted === true) return reject(new BodyNotRead({ reason: "unreadable" }))
    if (incoming.complete && incoming.readableEnded) return resolve("")
    const chunks: Array<Buffer> = []
    let size = 0
    const stop = () => {
      incoming.off("data", onData)
      incoming.off("end", onEnd)
      incoming.off("error", onError)
      incoming.off("close", onClose)
      signal?.removeEventListener("abort", onAbort)
    }
    const fail = (reason: BodyNotRead["reason"]) => {
      stop()
      reject(new BodyNotRead({ reason }))
    }
    // Answered already (request_timeout, the generation closing): nothing more is buffered.
    const onAbort = () => fail("unreadable")
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size <= maxBytes) chunks.push(chunk)
      else fail("too_large")
    }
    const onEnd = () => {
      stop()
      const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size)
      if (!isUtf8(body)) return reject(new BodyNotRead({ reason: "not_utf8" }))
      resolve(body.toString("utf8"))
    }
    const onError = () => fail("unreadable")
    // The client went away before the body was complete.
    const onClose = () => {
      if (!incoming.complete) fail("unreadable")
    }
    incoming.on("data", onData)
    incoming.on("end", onEnd)
    incoming.on("error", onError)
    incoming.on("close", onClose)
    signal?.addEventListener("abort", onAbort, { once: true })
  })

/** `readBodyText` for the routes of the Effect pipeline: interrupting the effect stops the read. */
export const bodyText = (maxBytes: number): Effect.Effect<string, BodyNotRead, HttpServerRequest.HttpServerRequest> =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
    Effect.async<string, BodyNotRead>((resume, signal) => {
      readBodyText(NodeHttpServerRequest.toIncomingMessage(request), maxBytes, signal).then(
        (text) => resume(Effect.succeed(text)),
        (error: unknown) =>
          resume(Effect.fail(error instanceof BodyNotRead ? error : new BodyNotRead({ reason: "unreadable" })))
      )
    })
  )
