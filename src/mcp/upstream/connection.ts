import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client"
import { Data, Duration, Effect } from "effect"
import type { BackendConfig } from "../../config/schema.js"
import { version } from "../../version.js"
import type { BackendCatalog } from "../catalog/backend-catalog.js"
import { asAuthProvider, backendRequestAuth } from "./auth.js"
import {
  type BackendChannel,
  type BackendSession,
  type ChannelSettings,
  makeBackendChannel,
  maxBackendAnswer
} from "./channel.js"
import { type CatalogBytes, makeBackendFetch } from "./fetch.js"
import { backendOutputValidator } from "./output-schemas.js"

export class BackendUnreachable extends Data.TaggedError("BackendUnreachable")<{
  readonly backend: string
  /** Safe to log: the SDK's message, which never carries our credentials. */
  readonly reason: string
}> {}

const reasonOf = (error: unknown) => (error instanceof Error ? error.message : String(error)).slice(0, 300)

/** A connected backend: the MCP client that owns the session, and the channel forwarded calls take. */
export interface BackendConnection {
  readonly client: Client
  readonly channel: BackendChannel
  readonly session: () => BackendSession | undefined
}

const clientInfo = { name: "gateway", version }

/**
 * One MCP client per backend and generation, over Streamable HTTP. It negotiates the era (2026-07-28
 * via `server/discover`, else the 2025 `initialize` handshake), and tells `onListChanged` when the
 * backend announces a changed tool, prompt or resource list. The channel shares its credentials and
 * negotiated session, and the client's requests go over the channel's connections.
 */
export const connectBackend = (
  backend: BackendConfig,
  onListChanged: () => void,
  now: () => number,
  budget?: ChannelSettings["budget"]
) =>
  Effect.tryPromise({
    try: async (signal): Promise<BackendConnection> => {
      const { headers, tokens } = backendRequestAuth(backend, now)
      const changed = { autoRefresh: false, debounceMs: 100, onChanged: () => onListChanged() }
      const client = new Client(clientInfo, {
        versionNegotiation: { mode: "auto" },
        listChanged: { tools: changed, prompts: changed, resources: changed },
        listMaxPages: 1000,
        // The gateway relays no input requests (sampling, elicitation) to backends: an `input_required`
        // result surfaces as an error the caller is told about (docs/mcp.md).
        inputRequired: { autoFulfill: false },
        // Output schemas are a backend's: their patterns run in linear time (src/json-schema.ts).
        jsonSchemaValidator: backendOutputValidator
      })
      const session = (): BackendSession | undefined => {
        const protocolVersion = client.getNegotiatedProtocolVersion()
        const era = client.getProtocolEra()
        if (protocolVersion === undefined || era === undefined) return undefined
        return { era, protocolVersion, sessionId: transport.sessionId }
      }
      const channel = makeBackendChannel({
        url: new URL(backend.url),
        headers,
        tokens,
        session,
        clientInfo,
        ...(budget === undefined ? {} : { budget })
      })
      // The client's requests go over the channel's connections: one set per backend.
      const catalogBytes: CatalogBytes = new Map()
      const transport = new StreamableHTTPClientTransport(new URL(backend.url), {
        requestInit: { headers },
        fetch: makeBackendFetch(channel, maxBackendAnswer, budget?.answers, catalogBytes),
        ...(tokens === undefined ? {} : { authProvider: asAuthProvider(tokens) })
      })
      // Closing the client (generation closing, reconnect) also drops the kept-alive connections.
      const closeConnections = () => channel.close()
      client.onclose = closeConnections
      try {
        await client.connect(transport, { timeout: Duration.toMillis(backend.timeouts.connect), signal })
      } catch (error) {
        await client.close().catch(() => {})
        closeConnections()
        throw error
      }
      return { client, channel, session }
    },
    catch: (error) => new BackendUnreachable({ backend: backend.id, reason: reasonOf(error) })
  })

/** Items one list of a backend may hold (tools, prompts, resources or templates); more fails the read. */
export const MAX_CATALOG_ITEMS = 50_000

/**
 * Every page of every list the backend offers; `cacheMode: refresh` also updates the client's own tool
 * index. Bounded (docs/mcp.md, "Backends"): `MAX_LIST_BYTES` for all pages of one list (counted by
 * the fetch, src/mcp/upstream/fetch.ts), `MAX_CATALOG_ITEMS` items per list; a backend listing more is
 * taken for down, not held in memory.
 */
export const fetchCatalog = (backend: BackendConfig, client: Client) =>
  Effect.tryPromise({
    try: async (signal): Promise<BackendCatalog> => {
      const options = { timeout: Duration.toMillis(backend.timeouts.connect), signal, cacheMode: "refresh" as const }
      const capabilities = client.getServerCapabilities() ?? {}
      const [tools, prompts, resources, templates] = await Promise.all([
        capabilities.tools === undefined ? [] : client.listTools(undefined, options).then((page) => page.tools),
        capabilities.prompts === undefined ? [] : client.listPrompts(undefined, options).then((page) => page.prompts),
        capabilities.resources === undefined
          ? []
          : client.listResources(undefined, options).then((page) => page.resources),
        capabilities.resources === undefined
          ? []
          : client.listResourceTemplates(undefined, options).then((page) => page.resourceTemplates)
      ])
      for (const [name, list] of [
        ["tools", tools],
        ["prompts", prompts],
        ["resources", resources],
        ["resource templates", templates]
      ] as const) {
        if (list.length > MAX_CATALOG_ITEMS) {
          throw new Error(`the backend lists ${list.length} ${name}, more than ${MAX_CATALOG_ITEMS}`)
        }
      }
      return { tools, prompts, resources, templates, completions: capabilities.completions !== undefined }
    },
    catch: (error) => new BackendUnreachable({ backend: backend.id, reason: reasonOf(error) })
  })

export const connectAndFetch = (
  backend: BackendConfig,
  onListChanged: () => void,
  now: () => number,
  budget?: ChannelSettings["budget"]
) =>
  Effect.flatMap(connectBackend(backend, onListChanged, now, budget), ({ client, channel, session }) =>
    fetchCatalog(backend, client).pipe(
      Effect.map((catalog) => ({ client, channel, session, catalog })),
      Effect.tapError(() => Effect.promise(() => client.close().catch(() => {})))
    )
  )
