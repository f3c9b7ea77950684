import { SUPPORTED_PROTOCOL_VERSIONS } from "@modelcontextprotocol/server"
import { isRecord } from "../../json.js"

/**
 * Every protocol revision the gateway serves, newest first: the 2026-07-28 revisions and the 2025-era
 * ones (negotiated by `initialize`). The MCP SDK lists only the modern ones in `server/discover` and
 * in its unsupported-version error to a modern request, and only the 2025-era ones in the error to a
 * 2025-era request; a client deciding what to speak should see them all (docs/mcp.md, "Protocol").
 */
export const servedVersions = (modern: ReadonlySet<string>): ReadonlyArray<string> =>
  [...new Set([...modern, ...SUPPORTED_PROTOCOL_VERSIONS])].sort().reverse()

const unsupportedVersionCode = -32022
const legacyUnsupported = /^Bad Request: Unsupported protocol version: (.*) \(supported versions: [^)]*\)$/

/**
 * The SDK's answer with every served version listed: a `server/discover` result, or an
 * unsupported-version error of either era. Any other answer is returned as it is, unread.
 */
export const withEveryVersion = async (
  method: unknown,
  response: Response,
  versions: ReadonlyArray<string>
): Promise<Response> => {
  const discover = method === "server/discover" && response.status === 200
  if (!discover && response.status !== 400) return response
  if (!(response.headers.get("content-type") ?? "").startsWith("application/json")) return response
  const text = await response.text()
  const rebuilt = (body: unknown) =>
    new Response(JSON.stringify(body), { status: response.status, headers: response.headers })
  let message: unknown
  try {
    message = JSON.parse(text)
  } catch {
    return new Response(text, { status: response.status, headers: response.headers })
  }
  if (!isRecord(message)) return rebuilt(message)
  const { result, error } = message
  if (discover && isRecord(result) && Array.isArray(result["supportedVersions"])) {
    return rebuilt({ ...message, result: { ...result, supportedVersions: versions } })
  }
  if (isRecord(error) && error["code"] === unsupportedVersionCode && isRecord(error["data"])) {
    return rebuilt({ ...message, error: { ...error, data: { ...error["data"], supported: versions } } })
  }
  const legacy =
    isRecord(error) && typeof error["message"] === "string" ? legacyUnsupported.exec(error["message"]) : null
  if (isRecord(error) && legacy !== null) {
    const text = `Bad Request: Unsupported protocol version: ${legacy[1]} (supported versions: ${versions.join(", ")})`
    return rebuilt({ ...message, error: { ...error, message: text } })
  }
  return rebuilt(message)
}
