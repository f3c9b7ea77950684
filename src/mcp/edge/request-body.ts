import type { IncomingMessage } from "node:http"
import { HttpError } from "../../http/error-body.js"
import { BodyNotRead, charsetProblem, notUtf8Description, readBodyText } from "../../http/read-body.js"
import type { Cancellation } from "../../runtime/cancellation.js"

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

/** 415 for a `Content-Type` naming another charset than UTF-8; undefined when it names none or UTF-8. */
export const charsetRefusal = (contentType: string | undefined): HttpError | undefined => {
  const problem = charsetProblem(contentType)
  return problem === undefined
    ? undefined
    : new HttpError({
        status: 415,
        code: "unsupported_media_type",
        description: `POST /mcp takes Content-Type: application/json in UTF-8: ${problem}.`
      })
}

const unreadable = new HttpError({
  status: 400,
  code: "invalid_request",
  description: "The request body could not be read."
})

const notUtf8 = new HttpError({ status: 400, code: "invalid_request", description: notUtf8Description })

/** The body as text, at most `maxMcpBody` bytes; rejects with the HttpError to answer. Stops reading on `signal`. */
export const readBody = (incoming: IncomingMessage, signal: Cancellation): Promise<string> =>
  readBodyText(incoming, maxMcpBody, signal).catch((error: unknown) => {
    if (!(error instanceof BodyNotRead)) throw unreadable
    throw error.reason === "too_large" ? tooLarge : error.reason === "not_utf8" ? notUtf8 : unreadable
  })

/** A JSON-RPC error that answers the request as a whole (no id could be read). */
export interface Rejection {
  readonly status: number
  readonly code: number
  readonly message: string
}

export type ParsedMessage =
  | { readonly _tag: "Message"; readonly message: unknown }
  | { readonly _tag: "Rejected"; readonly rejection: Rejection }

/** One JSON-RPC message; batches are refused (removed from MCP in 2025-06-18, and each call needs its own deadline). */
export const parseMessage = (text: string): ParsedMessage => {
  let message: unknown
  try {
    message = JSON.parse(text)
  } catch {
    return {
      _tag: "Rejected",
      rejection: { status: 400, code: -32700, message: "Parse error: the body is not valid JSON" }
    }
  }
  if (Array.isArray(message)) {
    return {
      _tag: "Rejected",
      rejection: {
        status: 400,
        code: -32600,
        message: "Invalid Request: JSON-RPC batches are not supported; send one message per request"
      }
    }
  }
  return { _tag: "Message", message }
}
