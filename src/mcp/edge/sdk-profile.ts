import {
  CLIENT_CAPABILITIES_META_KEY,
  createMcpHandler,
  PROTOCOL_VERSION_META_KEY,
  SERVER_INFO_META_KEY,
  Server
} from "@modelcontextprotocol/server"
import { isRecord } from "../../json.js"
import { version } from "../../version.js"

/**
 * What the MCP server SDK's handler itself does, asked of it once: the direct path (src/mcp/edge/direct.ts)
 * answers some requests without it and must answer exactly as it would, but the SDK does not export
 * these facts. So a throw-away handler is asked:
 *
 * - which 2026-era revisions it serves (the `supported` list of its unsupported-version error);
 * - what it stamps on a list result besides the list (`resultType` and its cache hints).
 *
 * An SDK upgrade that changes either changes the direct path with it; the tests that send every request
 * shape down both paths (test/mcp/paths.test.ts) catch anything else.
 */
export interface SdkProfile {
  readonly modernRevisions: ReadonlySet<string>
  /** `,"resultType":…,"_meta":{…}`: what follows the list in a 2026-era list result's JSON. */
  readonly modernListTail: string
}

const probe = async (): Promise<SdkProfile> => {
  const handler = createMcpHandler(() => {
    const server = new Server({ name: "probe", version: "0" }, { capabilities: { tools: {} } })
    server.setRequestHandler("tools/list", () => ({ tools: [] }))
    return server
  })
  const ask = async (revision: string) => {
    const response = await handler.fetch(
      new Request("http://probe/mcp", {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-protocol-version": revision,
          "mcp-method": "tools/list"
        },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "tools/list",
          params: { _meta: { [PROTOCOL_VERSION_META_KEY]: revision, [CLIENT_CAPABILITIES_META_KEY]: {} } }
        })
      })
    )
    return (await response.json()) as Record<string, unknown>
  }
  try {
    const refused = await ask("0000-01-01")
    const data = isRecord(refused["error"]) ? refused["error"]["data"] : undefined
    const supported = isRecord(data) && Array.isArray(data["supported"]) ? data["supported"] : []
    const modernRevisions = new Set(supported.filter((each): each is string => typeof each === "string"))
    const [latest] = modernRevisions
    const listed = latest === undefined ? {} : await ask(latest)
    const result = isRecord(listed["result"]) ? listed["result"] : {}
    const stamped = Object.entries(result).filter(([key]) => key !== "tools" && key !== "_meta")
    const meta = { [SERVER_INFO_META_KEY]: { name: "gateway", version } }
    const modernListTail =
      stamped.map(([key, value]) => `,${JSON.stringify(key)}:${JSON.stringify(value)}`).join("") +
      `,"_meta":${JSON.stringify(meta)}`
    return { modernRevisions, modernListTail }
  } finally {
    await handler.close()
  }
}

let profile: Promise<SdkProfile> | undefined

/** The SDK's profile, asked once per process. */
export const sdkProfile = (): Promise<SdkProfile> => {
  profile ??= probe()
  return profile
}
