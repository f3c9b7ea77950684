import { randomUUID } from "node:crypto"
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import {
  type EventStore,
  WebStandardStreamableHTTPServerTransport
} from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js"
import {
  CallToolRequestSchema,
  CompleteRequestSchema,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  ReadResourceRequestSchema,
  SetLevelRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema
} from "@modelcontextprotocol/sdk/types.js"
import {
  hostHeaderValidationResponse,
  localhostAllowedHostnames,
  localhostAllowedOrigins,
  originValidationResponse
} from "@modelcontextprotocol/server"
import {
  audio,
  type ConformanceBackend,
  defaultsSchema,
  enumsSchema,
  image,
  jsonError,
  jsonSchema2020,
  memoryEventStore
} from "./conformance-backend.js"
import { serveLoopback } from "./mcp-http.js"

/**
 * The server side of the conformance suite's server scenarios as most MCP servers in use are built: a
 * 2025-era server on the 1.x SDK (`@modelcontextprotocol/sdk`), with a session per `initialize` and an
 * event store (resumption after `Last-Event-ID`), speaking only the 2025 revisions. The same tools,
 * resources and prompts as test/support/conformance-backend.ts (the 2026-07-28 one), but sampling and
 * elicitation are real requests the server sends on the call's stream, and the SDK refuses them — its
 * own "Client does not support …" — on a session whose client did not declare the capability
 * (`enforceStrictCapabilities`). Like the suite's reference server, it refuses a Host or Origin that is
 * not a loopback name. Written with the SDK's low-level `Server`, so every schema is listed as written.
 */
export type ConformanceBackend2025 = ConformanceBackend & {
  /** The sessions it knows (a restart forgets them). */
  readonly sessions: () => ReadonlyArray<string>
  /** Forgets every session while it keeps listening (a server that expired them). */
  forgetSessions(): Promise<void>
}

const text = (value: string) => ({ content: [{ type: "text" as const, text: value }] })
const pause = (ms: number) => new Promise((done) => setTimeout(done, ms))
const noArgs = { type: "object" as const, properties: {} }

const tools = [
  { name: "test_simple_text", description: "Tests simple text content response", inputSchema: noArgs },
  { name: "test_image_content", description: "Tests image content response", inputSchema: noArgs },
  { name: "test_audio_content", description: "Tests audio content response", inputSchema: noArgs },
  { name: "test_embedded_resource", description: "Tests embedded resource content response", inputSchema: noArgs },
  {
    name: "test_multiple_content_types",
    description: "Tests response with multiple content types (text, image, resource)",
    inputSchema: noArgs
  },
  { name: "test_error_handling", description: "Tests error response handling", inputSchema: noArgs },
  {
    name: "test_tool_with_logging",
    description: "Tests tool that emits log messages during execution",
    inputSchema: noArgs
  },
  {
    name: "test_tool_with_progress",
    description: "Tests tool that reports progress notifications",
    inputSchema: noArgs
  },
  {
    name: "test_reconnection",
    description: "Tests SSE stream disconnection and client reconnection (SEP-1699)",
    inputSchema: noArgs
  },
  {
    name: "test_sampling",
    description: "Tests server-initiated sampling (LLM completion request)",
    inputSchema: {
      type: "object" as const,
      properties: { prompt: { type: "string", description: "The prompt to send to the LLM" } },
      required: ["prompt"]
    }
  },
  {
    name: "test_elicitation",
    description: "Tests server-initiated elicitation (user input request)",
    inputSchema: {
      type: "object" as const,
      properties: { message: { type: "string", description: "The message to show the user" } },
      required: ["message"]
    }
  },
  {
    name: "test_elicitation_sep1034_defaults",
    description: "Tests elicitation with default values per SEP-1034",
    inputSchema: noArgs
  },
  {
    name: "test_elicitation_sep1330_enums",
    description: "Tests elicitation with enum schema improvements per SEP-1330",
    inputSchema: noArgs
  },
  {
    name: "test_roots",
    description: "Lists the client's roots (roots/list) and returns them",
    inputSchema: noArgs
  },
  {
    name: "json_schema_2020_12_tool",
    description: "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)",
    inputSchema: jsonSchema2020
  }
]

const resources = [
  {
    uri: "test://static-text",
    name: "static-text",
    title: "Static Text Resource",
    description: "A static text resource for testing",
    mimeType: "text/plain"
  },
  {
    uri: "test://static-binary",
    name: "static-binary",
    title: "Static Binary Resource",
    description: "A static binary resource (image) for testing",
    mimeType: "image/png"
  },
  {
    uri: "test://watched-resource",
    name: "watched-resource",
    title: "Watched Resource",
    description: "A resource clients subscribe to",
    mimeType: "text/plain"
  }
]

const prompts = [
  { name: "test_simple_prompt", title: "Simple Test Prompt", description: "A simple prompt without arguments" },
  {
    name: "test_prompt_with_arguments",
    title: "Prompt With Arguments",
    description: "A prompt with required arguments",
    arguments: [
      { name: "arg1", description: "First test argument", required: true },
      { name: "arg2", description: "Second test argument", required: true }
    ]
  },
  {
    name: "test_prompt_with_embedded_resource",
    title: "Prompt With Embedded Resource",
    description: "A prompt that includes an embedded resource",
    arguments: [{ name: "resourceUri", description: "URI of the resource to embed", required: true }]
  },
  { name: "test_prompt_with_image", title: "Prompt With Image", description: "A prompt that includes image content" }
]

const elicitations: Record<string, { message: (args: Record<string, unknown>) => string; schema: unknown }> = {
  test_elicitation: {
    message: (args) => String(args["message"]),
    // As the suite's reference server asks (the suite answers with these two; the 1.x SDK checks the answer).
    schema: {
      type: "object",
      properties: {
        username: { type: "string", description: "User's response" },
        email: { type: "string", description: "User's email address" }
      },
      required: ["username", "email"]
    }
  },
  test_elicitation_sep1034_defaults: {
    message: () => "Please review and update the form fields with defaults",
    schema: defaultsSchema
  },
  test_elicitation_sep1330_enums: {
    message: () => "Please select options from the enum fields",
    schema: enumsSchema
  }
}

const createServer = () => {
  const server = new Server(
    { name: "mcp-conformance-test-server-2025", version: "1.0.0" },
    {
      capabilities: {
        tools: { listChanged: true },
        resources: { subscribe: true, listChanged: true },
        prompts: { listChanged: true },
        logging: {},
        completions: {}
      },
      // Sampling and roots are asked only of a client that declared them (the SDK checks elicitation itself).
      enforceStrictCapabilities: true
    }
  )
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }))
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const args = request.params.arguments ?? {}
    const related = { relatedRequestId: extra.requestId }
    switch (request.params.name) {
      case "test_simple_text":
        return text("This is a simple text response for testing.")
      case "test_image_content":
        return { content: [{ type: "image", data: image, mimeType: "image/png" }] }
      case "test_audio_content":
        return { content: [{ type: "audio", data: audio, mimeType: "audio/wav" }] }
      case "test_embedded_resource":
        return {
          content: [
            {
              type: "resource",
              resource: {
                uri: "test://embedded-resource",
                mimeType: "text/plain",
                text: "This is an embedded resource content."
              }
            }
          ]
        }
      case "test_multiple_content_types":
        return {
          content: [
            { type: "text", text: "Multiple content types test:" },
            { type: "image", data: image, mimeType: "image/png" },
            {
              type: "resource",
              resource: {
                uri: "test://mixed-content-resource",
                mimeType: "application/json",
                text: JSON.stringify({ test: "data", value: 123 })
              }
            }
          ]
        }
      case "test_error_handling":
        return {
          isError: true,
          content: [{ type: "text", text: "This tool intentionally returns an error for testing" }]
        }
      case "test_tool_with_logging": {
        for (const [at, data] of [
          "Tool execution started",
          "Tool processing data",
          "Tool execution completed"
        ].entries()) {
          if (at > 0) await pause(50)
          await extra.sendNotification({ method: "notifications/message", params: { level: "info", data } })
        }
        return text("Tool with logging executed successfully")
      }
      case "test_tool_with_progress": {
        const progressToken = request.params._meta?.progressToken
        for (const progress of [0, 50, 100]) {
          if (progressToken !== undefined) {
            await extra.sendNotification({
              method: "notifications/progress",
              params: { progressToken, progress, total: 100, message: `Completed step ${progress} of 100` }
            })
          }
          if (progress < 100) await pause(50)
        }
        return text(String(progressToken))
      }
      case "test_reconnection":
        extra.closeSSEStream?.()
        await pause(100)
        return text(
          "Reconnection test completed successfully. If you received this, the client properly reconnected after stream closure."
        )
      case "test_sampling": {
        const result = await server.createMessage(
          { messages: [{ role: "user", content: { type: "text", text: String(args["prompt"]) } }], maxTokens: 100 },
          related
        )
        const content = Array.isArray(result.content) ? result.content[0] : result.content
        return text(`LLM response: ${content?.type === "text" ? content.text : "No response"}`)
      }
      case "test_roots": {
        const result = await server.listRoots(undefined, related)
        return text(`Roots: ${JSON.stringify(result.roots)}`)
      }
      case "json_schema_2020_12_tool":
        return text(`JSON Schema 2020-12 tool called with: ${JSON.stringify(args)}`)
    }
    const elicitation = elicitations[request.params.name]
    if (elicitation === undefined) throw new Error(`Unknown tool: ${request.params.name}`)
    const answer = await server.elicitInput(
      { message: elicitation.message(args), requestedSchema: elicitation.schema as never },
      related
    )
    const prefix = request.params.name === "test_elicitation" ? "User response" : "Elicitation completed"
    return text(`${prefix}: action=${answer.action}, content=${JSON.stringify(answer.content ?? {})}`)
  })
  server.setRequestHandler(ListResourcesRequestSchema, async () => ({ resources }))
  server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => ({
    resourceTemplates: [
      {
        uriTemplate: "test://template/{id}/data",
        name: "template",
        title: "Resource Template",
        description: "A resource template with parameter substitution",
        mimeType: "application/json"
      }
    ]
  }))
  server.setRequestHandler(ReadResourceRequestSchema, async (request) => {
    const { uri } = request.params
    if (uri === "test://static-text") {
      return { contents: [{ uri, mimeType: "text/plain", text: "This is the content of the static text resource." }] }
    }
    if (uri === "test://static-binary") return { contents: [{ uri, mimeType: "image/png", blob: image }] }
    if (uri === "test://watched-resource") {
      return { contents: [{ uri, mimeType: "text/plain", text: "Watched resource content" }] }
    }
    const id = /^test:\/\/template\/([^/]+)\/data$/.exec(uri)?.[1]
    if (id === undefined) throw new Error(`Resource not found: ${uri}`)
    const data = JSON.stringify({ id, templateTest: true, data: `Data for ID: ${id}` })
    return { contents: [{ uri, mimeType: "application/json", text: data }] }
  })
  const subscriptions = new Set<string>()
  server.setRequestHandler(SubscribeRequestSchema, async (request) => {
    subscriptions.add(request.params.uri)
    return {}
  })
  server.setRequestHandler(UnsubscribeRequestSchema, async (request) => {
    subscriptions.delete(request.params.uri)
    return {}
  })
  server.setRequestHandler(SetLevelRequestSchema, async () => ({}))
  server.setRequestHandler(ListPromptsRequestSchema, async () => ({ prompts }))
  server.setRequestHandler(GetPromptRequestSchema, async (request) => {
    const args = request.params.arguments ?? {}
    switch (request.params.name) {
      case "test_simple_prompt":
        return { messages: [{ role: "user", content: { type: "text", text: "This is a simple prompt for testing." } }] }
      case "test_prompt_with_arguments":
        return {
          messages: [
            {
              role: "user",
              content: { type: "text", text: `Prompt with arguments: arg1='${args["arg1"]}', arg2='${args["arg2"]}'` }
            }
          ]
        }
      case "test_prompt_with_embedded_resource":
        return {
          messages: [
            {
              role: "user",
              content: {
                type: "resource",
                resource: {
                  uri: String(args["resourceUri"]),
                  mimeType: "text/plain",
                  text: "Embedded resource content for testing."
                }
              }
            },
            { role: "user", content: { type: "text", text: "Please process the embedded resource above." } }
          ]
        }
      case "test_prompt_with_image":
        return {
          messages: [
            { role: "user", content: { type: "image", data: image, mimeType: "image/png" } },
            { role: "user", content: { type: "text", text: "Please analyze the image above." } }
          ]
        }
    }
    throw new Error(`Unknown prompt: ${request.params.name}`)
  })
  server.setRequestHandler(CompleteRequestSchema, async (request) => {
    const { ref, argument } = request.params
    const values =
      ref.type === "ref/prompt" && ref.name === "test_prompt_with_arguments" && argument.name === "arg1"
        ? ["paris", "park", "party"].filter((each) => each.startsWith(argument.value))
        : []
    return { completion: { values, total: values.length, hasMore: false } }
  })
  return server
}

export const startConformanceBackend2025 = async (port = 0): Promise<ConformanceBackend2025> => {
  const sessions = new Map<string, WebStandardStreamableHTTPServerTransport>()
  const events = memoryEventStore() as unknown as EventStore

  const serve = async (request: Request): Promise<Response> => {
    const refused =
      hostHeaderValidationResponse(request, localhostAllowedHostnames()) ??
      originValidationResponse(request, localhostAllowedOrigins())
    if (refused !== undefined) return refused
    const id = request.headers.get("mcp-session-id")
    if (id !== null) {
      const transport = sessions.get(id)
      return transport === undefined ? jsonError(404, -32001, "Session not found") : transport.handleRequest(request)
    }
    if (request.method !== "POST") return jsonError(400, -32000, "Bad Request: No valid session ID provided")
    const transport: WebStandardStreamableHTTPServerTransport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      eventStore: events,
      retryInterval: 500,
      onsessioninitialized: (session) => {
        sessions.set(session, transport)
      },
      onsessionclosed: (session) => {
        sessions.delete(session)
      }
    })
    await createServer().connect(transport)
    return transport.handleRequest(request)
  }

  const loopback = await serveLoopback(serve, port)
  const forget = async () => {
    for (const transport of sessions.values()) await transport.close()
    sessions.clear()
  }
  const { stop, start } = loopback
  return Object.assign(loopback, {
    sessions: () => [...sessions.keys()],
    forgetSessions: forget,
    // Down: every session is gone with the process it lived in, as a real restart.
    stop: async () => {
      await forget()
      await stop()
    },
    start
  })
}
