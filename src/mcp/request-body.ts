import { type HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Effect } from "effect"
import { HttpError } from "../http/error-body.js"

/**
 * Reading and parsing an /mcp body (docs/mcp.md, "Request limits"). Size and media type are HTTP
 * errors in the gateway's error body; a body that is not one JSON-RPC message is a JSON-RPC error.
 */

/** 4 MiB: tool arguments may carry documents; the SDK's own default, and read only after the token checks out. */
export const maxMcpBody = 4 * 1024 * 1024

const tooLarge = new HttpError({
  status: 413,
  code: "payload_too_large",
  description: `The request body is larger than ${maxMcpBody} bytes.`
})

export const unsupportedMediaType = new HttpError({
  status: 415,
  code: "unsupported_media_type",
  description: "POST /mcp takes Content-Type: application/json."
})

const unreadable = new HttpError({
  status: 400,
  code: "invalid_request",
  description: "The request body could not be read."
})

/**
 * The body as text, at most `maxMcpBody` bytes. Read from the Node request directly: the platform's
 * stream-based reader costs more per request than everything else the route does before the SDK
 * (docs/benchmarks.md), and an /mcp body is one small JSON document read in one go anyway.
 */
export const readBody = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.async<string, HttpError>((resume) => {
    const incoming = NodeHttpServerRequest.toIncomingMessage(request)
    if (Number(incoming.headers["content-length"] ?? 0) > maxMcpBody) return resume(Effect.fail(tooLarge))
    const chunks: Array<Buffer> = []
    let size = 0
    const stop = () => {
      incoming.off("data", onData)
      incoming.off("end", onEnd)
      incoming.off("error", onError)
    }
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size <= maxMcpBody) {
        chunks.push(chunk)
        return
      }
      stop()
      resume(Effect.fail(tooLarge))
    }
    const onEnd = () => {
      stop()
      resume(Effect.succeed(Buffer.concat(chunks, size).toString("utf8")))
    }
    const onError = () => {
      stop()
      resume(Effect.fail(unreadable))
    }
    incoming.on("data", onData)
    incoming.on("end", onEnd)
    incoming.on("error", onError)
    return Effect.sync(stop)
  })

export const jsonRpcError = (status: number, code: number, message: string) =>
  HttpServerResponse.unsafeJson({ jsonrpc: "2.0", id: null, error: { code, message } }, { status })

export type ParsedMessage =
  | { readonly _tag: "Message"; readonly message: unknown }
  | { readonly _tag: "Rejected"; readonly response: HttpServerResponse.HttpServerResponse }

/** One JSON-RPC message; batches are refused (removed from MCP in 2025-06-18, and each call needs its own deadline). */
export const parseMessage = (text: string): ParsedMessage => {
  let message: unknown
  try {
    message = JSON.parse(text)
  } catch {
    return { _tag: "Rejected", response: jsonRpcError(400, -32700, "Parse error: the body is not valid JSON") }
  }
  if (Array.isArray(message)) {
    return {
      _tag: "Rejected",
      response: jsonRpcError(
        400,
        -32600,
        "Invalid Request: JSON-RPC batches are not supported; send one message per request"
      )
    }
  }
  return { _tag: "Message", message }
}
