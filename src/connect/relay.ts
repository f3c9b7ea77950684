import type { JSONRPCMessage, Transport, TransportSendOptions } from "@modelcontextprotocol/client"
import {
  isInitializeRequest,
  isJSONRPCErrorResponse,
  isJSONRPCNotification,
  isJSONRPCRequest,
  isJSONRPCResultResponse
} from "@modelcontextprotocol/client"
import { SessionEnded } from "./token-source.js"

/** JSON-RPC code of the answer to a request the bridge could not deliver because the sign-in ended. */
export const SESSION_ENDED_CODE = -32001
/** JSON-RPC code of the answer to a request the bridge could not deliver for any other reason. */
export const NOT_DELIVERED_CODE = -32000
/** JSON-RPC code (internal error) of the answer to a request whose stream the gateway ended without answering. */
export const NO_ANSWER_CODE = -32603

/** The client's side of the version handshake the relay must tell the HTTP transport about. */
interface VersionedTransport extends Transport {
  setProtocolVersion?: (version: string) => void
}

/**
 * Relays JSON-RPC messages both ways between the MCP client (stdio) and the gateway (Streamable HTTP):
 * requests, notifications (progress, cancellation, list changes) and the answers to requests the gateway
 * sends. Each message is sent on its own, so a long tool call never holds up the next request. A
 * cancellation is passed on and also closes that request's HTTP stream, which is how the 2026-07-28
 * revision cancels (the gateway then cancels the backend call). A request
 * that cannot be delivered is answered with a JSON-RPC error whose message says why and what to do; when
 * the gateway answered with a JSON-RPC error inside an HTTP error, that error is passed on as it is. A
 * request whose response stream ends without its answer (the gateway restarted, a proxy cut the stream)
 * is answered with {@link NO_ANSWER_CODE}, so the client never waits for an answer that cannot come.
 * Resolves when the client closes its side.
 */
export const relay = (client: Transport, gateway: VersionedTransport, say: (line: string) => void): Promise<void> =>
  new Promise<void>((done) => {
    const handshakes = new Set<string | number>()
    const inFlight = new Map<string | number, AbortController>()
    gateway.onmessage = (message) => {
      if (isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message)) {
        if (message.id !== undefined) inFlight.delete(message.id)
      }
      // A 2025-era handshake: later requests carry the negotiated version in MCP-Protocol-Version.
      if (isJSONRPCResultResponse(message) && handshakes.delete(message.id)) {
        const version = (message.result as { protocolVersion?: unknown }).protocolVersion
        if (typeof version === "string") gateway.setProtocolVersion?.(version)
      }
      client.send(message).catch((error) => say(`could not write to the client: ${describe(error)}`))
    }
    gateway.onerror = (error) => say(`gateway stream: ${describe(error)}`)
    client.onerror = (error) => say(`client stream: ${describe(error)}`)
    client.onmessage = (message) => {
      let options: TransportSendOptions | undefined
      if (isJSONRPCRequest(message)) {
        if (isInitializeRequest(message)) handshakes.add(message.id)
        const controller = new AbortController()
        inFlight.set(message.id, controller)
        options = {
          requestSignal: controller.signal,
          // Fired when the request's stream ends, answered or not; never when the client cancelled it.
          onRequestStreamEnd: () => {
            if (inFlight.get(message.id) !== controller) return
            inFlight.delete(message.id)
            handshakes.delete(message.id)
            client.send(unanswered(message.id)).catch(() => {})
          }
        }
      }
      const cancelled = cancelledRequest(message)
      if (cancelled !== undefined) {
        inFlight.get(cancelled)?.abort()
        inFlight.delete(cancelled)
      }
      gateway.send(message, options).catch((error: unknown) => {
        if (!isJSONRPCRequest(message)) {
          say(`a notification could not be delivered: ${describe(error)}`)
          return
        }
        handshakes.delete(message.id)
        // A request the client cancelled is not answered (the client no longer waits for it).
        if (inFlight.delete(message.id)) client.send(undelivered(message.id, error)).catch(() => {})
      })
    }
    client.onclose = () => {
      gateway.close().finally(done)
    }
  })

/** The request id a `notifications/cancelled` names, if `message` is one. */
const cancelledRequest = (message: JSONRPCMessage): string | number | undefined => {
  if (!isJSONRPCNotification(message) || message.method !== "notifications/cancelled") return undefined
  const id = (message.params as { requestId?: unknown } | undefined)?.requestId
  return typeof id === "string" || typeof id === "number" ? id : undefined
}

const describe = (error: unknown): string => (error instanceof Error ? error.message : String(error))

/** The answer to request `id` whose stream the gateway ended before answering it. */
export const unanswered = (id: string | number): JSONRPCMessage => ({
  jsonrpc: "2.0",
  id,
  error: {
    code: NO_ANSWER_CODE,
    message:
      "The gateway ended the stream without answering the request; it may have run all the same — check before " +
      "repeating a change."
  }
})

/** The answer to request `id` that did not reach the gateway, or the gateway's own JSON-RPC error. */
export const undelivered = (id: string | number, error: unknown): JSONRPCMessage => {
  if (error instanceof SessionEnded) {
    return { jsonrpc: "2.0", id, error: { code: SESSION_ENDED_CODE, message: error.message } }
  }
  const text = (error as { data?: { text?: unknown } } | undefined)?.data?.text
  if (typeof text === "string") {
    try {
      const body = JSON.parse(text) as { jsonrpc?: unknown; error?: { code?: unknown; message?: unknown } }
      if (body.jsonrpc === "2.0" && typeof body.error?.code === "number" && typeof body.error.message === "string") {
        return { jsonrpc: "2.0", id, error: { code: body.error.code, message: body.error.message } }
      }
    } catch {
      // Not JSON: described below.
    }
  }
  return {
    jsonrpc: "2.0",
    id,
    error: { code: NOT_DELIVERED_CODE, message: `The gateway bridge could not deliver the request: ${describe(error)}` }
  }
}
