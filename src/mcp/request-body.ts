import { HttpIncomingMessage, type HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Option } from "effect"
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

export const readBody = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.gen(function* () {
    if (Number(request.headers["content-length"] ?? 0) > maxMcpBody) return yield* tooLarge
    const bytes = yield* request.arrayBuffer.pipe(
      HttpIncomingMessage.withMaxBodySize(Option.some(maxMcpBody)),
      Effect.mapError((error) =>
        String(error.cause).includes("maxBytes")
          ? tooLarge
          : new HttpError({ status: 400, code: "invalid_request", description: "The request body could not be read." })
      )
    )
    return new TextDecoder().decode(bytes)
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
