import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client"
import { Data, Duration, Effect } from "effect"
import { version } from "../cli/run.js"
import type { BackendConfig } from "../config/schema.js"
import { backendRequestAuth } from "./backend-auth.js"
import { makeBackendFetch } from "./backend-fetch.js"
import type { BackendCatalog } from "./catalog.js"

export class BackendUnreachable extends Data.TaggedError("BackendUnreachable")<{
  readonly backend: string
  /** Safe to log: the SDK's message, which never carries our credentials. */
  readonly reason: string
}> {}

const reasonOf = (error: unknown) => (error instanceof Error ? error.message : String(error)).slice(0, 300)

/**
 * One MCP client per backend and generation, over Streamable HTTP. It negotiates the era (2026-07-28
 * via `server/discover`, else the 2025 `initialize` handshake), and tells `onListChanged` when the
 * backend announces a changed tool, prompt or resource list.
 */
export const connectBackend = (backend: BackendConfig, onListChanged: () => void) =>
  Effect.tryPromise({
    try: async (signal) => {
      const { headers, authProvider } = backendRequestAuth(backend)
      const changed = { autoRefresh: false, debounceMs: 100, onChanged: () => onListChanged() }
      const client = new Client(
        { name: "gateway", version },
        {
          versionNegotiation: { mode: "auto" },
          listChanged: { tools: changed, prompts: changed, resources: changed },
          listMaxPages: 1000
        }
      )
      const backendFetch = makeBackendFetch()
      const transport = new StreamableHTTPClientTransport(new URL(backend.url), {
        requestInit: { headers },
        fetch: backendFetch.fetch,
        ...(authProvider === undefined ? {} : { authProvider })
      })
      // Closing the client (generation closing, reconnect) also drops its kept-alive connections.
      client.onclose = backendFetch.close
      try {
        await client.connect(transport, { timeout: Duration.toMillis(backend.timeouts.connect), signal })
      } catch (error) {
        await client.close().catch(() => {})
        backendFetch.close()
        throw error
      }
      return client
    },
    catch: (error) => new BackendUnreachable({ backend: backend.id, reason: reasonOf(error) })
  })

/** Every page of every list the backend offers; `cacheMode: refresh` also updates the client's own tool index. */
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
      return { tools, prompts, resources, templates, completions: capabilities.completions !== undefined }
    },
    catch: (error) => new BackendUnreachable({ backend: backend.id, reason: reasonOf(error) })
  })

export const connectAndFetch = (backend: BackendConfig, onListChanged: () => void) =>
  Effect.flatMap(connectBackend(backend, onListChanged), (client) =>
    fetchCatalog(backend, client).pipe(
      Effect.map((catalog) => ({ client, catalog })),
      Effect.tapError(() => Effect.promise(() => client.close().catch(() => {})))
    )
  )
