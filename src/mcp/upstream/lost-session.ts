import { jsonRpcErrorIn } from "./error-body.js"

/** Only the start of an error body is read to recognise a lost session. */
export const lostSessionBodyLimit = 8 * 1024

/**
 * Whether a backend's HTTP answer to a request that carried its session id says it no longer knows
 * that session — it restarted, or expired the session — so the request ran nothing and a new session
 * will do. Servers say so in several ways (docs/mcp.md, "Backends that restart"):
 * - 404, as the Streamable HTTP transport specifies (the SDKs: -32001 "Session not found");
 * - 400 with a JSON-RPC error naming the session (the reference servers' "Bad Request: No valid session
 *   ID provided", code -32000);
 * - 401 from a server that ties sessions to its own authentication — counted only for a backend whose
 *   credentials the gateway renews (`renewable`: OAuth client credentials), and asked only after they
 *   were renewed and sent again, so it is not a credentials problem of ours. For any other backend a
 *   401 refuses the gateway's credentials: no new session would change that.
 * A 404 that is a JSON-RPC "method not found" is an answer, not a lost session.
 */
export const isLostSession = (status: number, body: string | undefined, renewable: boolean): boolean => {
  const error = jsonRpcErrorIn(body)
  if (status === 404) return error?.code !== -32601
  if (status === 400) return error !== undefined && /session/i.test(error.message)
  return status === 401 && renewable
}
