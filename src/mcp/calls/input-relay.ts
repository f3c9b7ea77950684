import { randomUUID } from "node:crypto"
import type { Caller } from "../../bearer/caller.js"
import { isRecord } from "../../json.js"
import type { Cancellation } from "../../runtime/cancellation.js"
import type { JsonRpcErrorObject } from "../upstream/channel.js"
import { requestTimeoutCode } from "../upstream/forward.js"
import { MAX_ARGUMENT_DEPTH, nestsDeeperThan, tooDeep } from "./depth.js"
import { callerKey } from "./in-flight.js"

/** What a caller answered to a request for input: its result, or its JSON-RPC error. */
export type InputAnswer =
  | { readonly ok: true; readonly result: Record<string, unknown> }
  | { readonly ok: false; readonly error: JsonRpcErrorObject }

/** A request for input sent to a caller with a gateway-minted id, waiting for the caller's answer. */
interface Waiting {
  readonly owner: string
  readonly resolve: (answer: InputAnswer) => void
}

/** At most this many requests for input wait per caller, and in all (each holds a call open). */
const perCaller = 16
const overall = 10_000

/**
 * Requests for input (sampling, elicitation) the gateway sends a 2025-era caller on its `tools/call`
 * stream, and the answers that come back as POSTs of their own (docs/mcp.md, "Input requests"). The
 * gateway keeps no sessions, but it runs as one process: an answer is matched in memory by the id the
 * gateway minted, and only from the caller (issuer, subject, client, session) the request went to. An
 * answer that matches nothing is refused.
 */
export class InputRelay {
  private readonly waiting = new Map<string, Waiting>()
  private readonly counts = new Map<string, number>()

  /**
   * Sends `request` to the caller (through `send`, with the minted id) and waits for its answer, until
   * `signal` fires or the call's `deadline` (ms since epoch) passes: then the caller is told the request
   * is cancelled and the answer is the request-timeout error the rest of /mcp gives (-32001), which
   * ends the call while it can still be answered. Undefined when too many already wait.
   */
  ask(
    caller: Caller,
    request: { readonly method: string; readonly params: unknown },
    send: (message: Record<string, unknown>) => boolean,
    signal: Cancellation,
    deadline: number
  ): Promise<InputAnswer> | undefined {
    const owner = callerKey(caller)
    const count = this.counts.get(owner) ?? 0
    if (count >= perCaller || this.waiting.size >= overall) return undefined
    const id = `gateway-input-${randomUUID()}`
    return new Promise<InputAnswer>((resolve) => {
      const finish = (answer: InputAnswer) => {
        if (!this.waiting.delete(id)) return
        const left = (this.counts.get(owner) ?? 1) - 1
        if (left === 0) this.counts.delete(owner)
        else this.counts.set(owner, left)
        clearTimeout(timer)
        signal.removeEventListener("abort", onAbort)
        resolve(answer)
      }
      const onAbort = () => finish({ ok: false, error: { code: -32800, message: "Request cancelled" } })
      const onDeadline = () => {
        const params = { requestId: id, reason: "the call's deadline passed" }
        send({ jsonrpc: "2.0", method: "notifications/cancelled", params })
        finish({ ok: false, error: inputTimedOut })
      }
      this.waiting.set(id, { owner, resolve: finish })
      this.counts.set(owner, count + 1)
      const timer = setTimeout(onDeadline, Math.max(0, deadline - Date.now()))
      if (signal.aborted) return onAbort()
      signal.addEventListener("abort", onAbort, { once: true })
      const sent = send({ jsonrpc: "2.0", id, method: request.method, params: request.params })
      if (!sent) {
        finish({
          ok: false,
          error: {
            code: -32603,
            message: "The request for input could not be sent: the client does not take a stream."
          }
        })
      }
    })
  }

  /**
   * A caller's POSTed JSON-RPC response: delivered to the request it answers, or refused. A result that
   * nests deeper than the gateway passes on is refused ("too deep"), and the call it answers ends with
   * that -32602 error.
   */
  answer(caller: Caller, message: Record<string, unknown>): "delivered" | "unknown" | "too deep" {
    const id = message["id"]
    const waiting = typeof id === "string" ? this.waiting.get(id) : undefined
    if (waiting === undefined || waiting.owner !== callerKey(caller)) return "unknown"
    const { result, error } = message
    if (isRecord(result) && nestsDeeperThan(result, MAX_ARGUMENT_DEPTH)) {
      waiting.resolve({ ok: false, error: answerTooDeep })
      return "too deep"
    }
    if (isRecord(result)) waiting.resolve({ ok: true, result })
    else if (isRecord(error) && Number.isInteger(error["code"]) && typeof error["message"] === "string") {
      waiting.resolve({ ok: false, error: { code: error["code"] as number, message: error["message"].slice(0, 1000) } })
    } else return "unknown"
    return "delivered"
  }
}

const inputTimedOut: JsonRpcErrorObject = {
  code: requestTimeoutCode,
  message: "The client did not answer the request for input in time; the call was cancelled."
}

/** The error a too-deep answer to a request for input gets, and ends its call with. */
export const answerTooDeep: JsonRpcErrorObject = {
  code: -32602,
  message: tooDeep("the answer to the request for input", "nests")
}

/** A JSON-RPC response (an answer, not a request or notification). */
export const isJsonRpcResponse = (message: unknown): message is Record<string, unknown> =>
  isRecord(message) &&
  message["jsonrpc"] === "2.0" &&
  !("method" in message) &&
  "id" in message &&
  ("result" in message || "error" in message)
