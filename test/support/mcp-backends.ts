import { randomUUID } from "node:crypto"
import {
  createMcpHandler,
  McpServer,
  ResourceTemplate,
  WebStandardStreamableHTTPServerTransport
} from "@modelcontextprotocol/server"
import * as z from "zod/v4"
import { type LoopbackServer, serveLoopback } from "./mcp-http.js"

/**
 * Real MCP servers (server SDK 2.x over HTTP on loopback) used as gateway backends. Each records the
 * headers and bodies it receives, so tests can prove what reached it (and what did not).
 */
export interface TestBackend extends LoopbackServer {
  /** Tool calls whose handler saw its abort signal fire (the gateway cancelled them). */
  readonly aborted: Array<string>
  /** Announces a changed tool list to subscribed clients (2026-07-28 `subscriptions/listen`); SDK backends only. */
  readonly toolsChanged: () => void
}

type Era = "both" | "modern-only"

export const startBackend = async (
  name: string,
  register: (server: McpServer, aborted: Array<string>) => void,
  options: {
    readonly era?: Era
    readonly port?: number
    readonly intercept?: (body: unknown) => Response | undefined
  } = {}
): Promise<TestBackend> => {
  const aborted: Array<string> = []
  const handler = createMcpHandler(
    () => {
      const server = new McpServer({ name, version: "1.0.0" })
      register(server, aborted)
      return server
    },
    { legacy: options.era === "modern-only" ? "reject" : "stateless" }
  )
  const loopback = await serveLoopback(async (request) => {
    if (options.intercept !== undefined && request.method === "POST") {
      const replaced = options.intercept(
        await request
          .clone()
          .json()
          .catch(() => undefined)
      )
      if (replaced !== undefined) return replaced
    }
    return handler.fetch(request)
  }, options.port)
  return Object.assign(loopback, { aborted, toolsChanged: () => handler.notify.toolsChanged() })
}

const text = (value: string) => ({ content: [{ type: "text" as const, text: value }] })

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((done, fail) => {
    const timer = setTimeout(done, ms)
    signal.addEventListener("abort", () => {
      clearTimeout(timer)
      fail(new Error("aborted"))
    })
  })

/** Tools every test backend shares: `search` (the colliding name), `echo`, `whoami` and `add`. */
export const commonTools = (server: McpServer, name: string) => {
  server.registerTool(
    "search",
    { description: `search in ${name}`, inputSchema: z.object({ q: z.string() }) },
    async ({ q }) => text(`${name}:${q}`)
  )
  server.registerTool("echo", { inputSchema: z.object({ message: z.string() }) }, async ({ message }) => text(message))
}

/** The feature-rich backend: slow and progress tools, prompts, resources, templates, completion. */
export const alphaTools = (server: McpServer, aborted: Array<string>) => {
  commonTools(server, "alpha")
  server.registerTool("slow", { inputSchema: z.object({ ms: z.number() }) }, async ({ ms }, ctx) => {
    try {
      await sleep(ms, ctx.mcpReq.signal)
    } catch {
      aborted.push("slow")
      throw new Error("cancelled")
    }
    return text(`slept ${ms}`)
  })
  server.registerTool("progress", { inputSchema: z.object({ steps: z.number() }) }, async ({ steps }, ctx) => {
    const token = ctx.mcpReq._meta?.progressToken
    for (let step = 1; step <= steps; step++) {
      if (token !== undefined) {
        await ctx.mcpReq.notify({
          method: "notifications/progress",
          params: { progressToken: token, progress: step, total: steps }
        })
      }
      await new Promise((done) => setTimeout(done, 20))
    }
    return text(`done ${steps}`)
  })
  // Sends one log message per level it is given, on the call's own stream, then answers (whatever level
  // the request names: the gateway's filtering is what the tests check).
  server.server.registerCapabilities({ logging: {} })
  server.registerTool("chatty", { inputSchema: z.object({ levels: z.array(z.string()) }) }, async ({ levels }, ctx) => {
    for (const level of levels) {
      await ctx.mcpReq.notify({
        method: "notifications/message",
        params: { level, logger: "chatty", data: `a ${level} message` }
      } as never)
    }
    return text(`logged ${levels.length}`)
  })
  server.registerTool("write_note", { inputSchema: z.object({ text: z.string() }) }, async ({ text: note }) =>
    text(`saved ${note}`)
  )
  server.registerTool("internal_admin", { inputSchema: z.object({}) }, async () => text("should never be reachable"))
  server.registerPrompt(
    "greeting",
    { description: "Greets someone", argsSchema: z.object({ name: z.string() }) },
    ({ name }) => ({ messages: [{ role: "user", content: { type: "text", text: `Hello ${name}` } }] })
  )
  server.registerResource("readme", "note://readme", { mimeType: "text/plain" }, async (uri) => ({
    contents: [{ uri: uri.href, text: "alpha readme" }]
  }))
  server.registerResource(
    "note",
    new ResourceTemplate("note://notes/{id}", {
      list: undefined,
      complete: { id: (value) => ["1", "2", "10"].filter((id) => id.startsWith(value)) }
    }),
    { mimeType: "text/plain" },
    async (uri, variables) => ({ contents: [{ uri: uri.href, text: `note ${String(variables["id"])}` }] })
  )
}

/**
 * A 2025-era backend built with the 1.x SDK (`@modelcontextprotocol/sdk`), stateless Streamable HTTP:
 * proves the gateway still talks to servers that only know `initialize`.
 */
export const startLegacyBackend = async (name: string): Promise<TestBackend> => {
  const aborted: Array<string> = []
  const { McpServer: LegacyServer } = await import("@modelcontextprotocol/sdk/server/mcp.js")
  const { StreamableHTTPServerTransport } = await import("@modelcontextprotocol/sdk/server/streamableHttp.js")
  const { z: z3 } = await import("zod/v3")
  const loopback = await serveLoopback(async (request, raw, res) => {
    const server = new LegacyServer({ name, version: "1.0.0" })
    server.tool("search", { q: z3.string() }, async ({ q }) => text(`${name}:${q}`))
    server.tool("legacy_echo", { message: z3.string() }, async ({ message }) => text(message))
    server.tool("slow", { ms: z3.number() }, async ({ ms }, extra) => {
      try {
        await sleep(ms, extra.signal)
      } catch {
        aborted.push("slow")
        throw new Error("cancelled")
      }
      return text(`slept ${ms}`)
    })
    const transport = new StreamableHTTPServerTransport({ enableJsonResponse: true })
    res.on("close", () => {
      void transport.close()
      void server.close()
    })
    await server.connect(transport)
    const body = request.method === "POST" ? await request.json().catch(() => undefined) : undefined
    await transport.handleRequest(raw, res, body)
    return undefined
  })
  // The 1.x stateless server has no stream to announce changes on.
  return Object.assign(loopback, { aborted, toolsChanged: () => {} })
}

/** A stateful backend: one session per `initialize`, kept until `forgetSessions` (a restart, as the gateway sees it). */
export interface StatefulBackend extends TestBackend {
  readonly sessions: () => ReadonlyArray<string>
  forgetSessions(): void
  /** A real restart: the listener closes (every connection with it), the sessions are gone, it listens again. */
  restart(): Promise<void>
}

/**
 * How a server answers a request for a session it does not know — each seen from real servers:
 * - `404`: the Streamable HTTP transport's rule (server SDK: -32001 "Session not found");
 * - `400`: the reference servers (`server-everything`): -32000 "Bad Request: No valid session ID provided";
 * - `401`: a server that ties sessions to its own authentication.
 */
export type LostSessionAnswer = 404 | 400 | 401

const lostSessionAnswers: Record<LostSessionAnswer, { code: number; message: string }> = {
  404: { code: -32001, message: "Session not found" },
  400: { code: -32000, message: "Bad Request: No valid session ID provided" },
  401: { code: -32001, message: "Unauthorized: unknown session" }
}

/**
 * A 2025-era backend with sessions (server SDK 2.x, `WebStandardStreamableHTTPServerTransport` with a
 * session id generator), speaking only `protocolVersion`: requests must carry the session id the
 * `initialize` answer gave, and an unknown session is answered 404, as the Streamable HTTP spec says.
 * Besides the common tools it has a prompt, `hello` (the gateway forwards prompts through its MCP client).
 * `refuses`: requests it answers as if it had lost their session while keeping it — a backend that is
 * up and answers its lists, yet refuses these.
 */
export const startStatefulBackend = async (
  name: string,
  protocolVersion = "2025-06-18",
  lostSession: LostSessionAnswer = 404,
  refuses: (message: unknown) => boolean = () => false
): Promise<StatefulBackend> => {
  const aborted: Array<string> = []
  const sessions = new Map<string, WebStandardStreamableHTTPServerTransport>()
  const lost = () =>
    new Response(JSON.stringify({ jsonrpc: "2.0", id: null, error: lostSessionAnswers[lostSession] }), {
      status: lostSession,
      headers: { "content-type": "application/json" }
    })
  const loopback = await serveLoopback(async (request) => {
    const id = request.headers.get("mcp-session-id")
    if (id !== null) {
      const transport = sessions.get(id)
      const body = request.method === "POST" ? request.clone().json() : Promise.resolve(undefined)
      const message: unknown = await body.catch(() => undefined)
      if (transport !== undefined && !refuses(message)) return transport.handleRequest(request)
      return lost()
    }
    const transport: WebStandardStreamableHTTPServerTransport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: true,
      onsessioninitialized: (session) => {
        sessions.set(session, transport)
      }
    })
    const server = new McpServer({ name, version: "1.0.0" }, { supportedProtocolVersions: [protocolVersion] })
    commonTools(server, name)
    server.registerPrompt("hello", { argsSchema: z.object({ who: z.string() }) }, ({ who }) => ({
      messages: [{ role: "user", content: { type: "text", text: `Hello ${who}` } }]
    }))
    await server.connect(transport)
    return transport.handleRequest(request)
  })
  return Object.assign(loopback, {
    aborted,
    toolsChanged: () => {},
    sessions: () => [...sessions.keys()],
    forgetSessions: () => sessions.clear(),
    restart: async () => {
      await loopback.stop()
      sessions.clear()
      await loopback.start()
    }
  })
}
