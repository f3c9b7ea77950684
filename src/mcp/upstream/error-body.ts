import { isRecord } from "../../json.js"
import type { JsonRpcErrorObject } from "./channel.js"

/** A longer HTTP error body is not read for a JSON-RPC error. */
export const maxErrorBody = 64 * 1024

/**
 * The JSON-RPC error a backend's HTTP error body carries, if it is one: `{"error": {code, message,
 * data?}}` with an integer code and a string message (cut to 1,000 characters). The one reading of
 * such bodies, for recognising a lost session (lost-session.ts) and for passing a backend's answer on
 * (forward.ts).
 */
export const jsonRpcErrorIn = (body: string | undefined): JsonRpcErrorObject | undefined => {
  if (body === undefined || body.length > maxErrorBody) return undefined
  let parsed: unknown
  try {
    parsed = JSON.parse(body)
  } catch {
    return undefined
  }
  const error = isRecord(parsed) ? parsed["error"] : undefined
  if (!isRecord(error) || !Number.isSafeInteger(error["code"]) || typeof error["message"] !== "string") return undefined
  const { code, message, data } = error
  return { code: code as number, message: message.slice(0, 1_000), ...(data === undefined ? {} : { data }) }
}
