import { randomUUID } from "node:crypto"
import {
  acceptedContent,
  completable,
  createMcpHandler,
  type EventStore,
  fromJsonSchema,
  hostHeaderValidationResponse,
  inputRequired,
  isLegacyRequest,
  type JSONRPCMessage,
  localhostAllowedHostnames,
  localhostAllowedOrigins,
  McpServer,
  originValidationResponse,
  ResourceTemplate,
  WebStandardStreamableHTTPServerTransport
} from "@modelcontextprotocol/server"
import * as z from "zod/v4"
import { type LoopbackServer, serveLoopback } from "./mcp-http.js"

/**
 * The server side of the official MCP conformance suite (`@modelcontextprotocol/conformance`, server
 * scenarios; test/mcp/conformance.test.ts): a real MCP server (server SDK 2.x) with every tool, resource
 * and prompt the scenarios call, written after the suite's own reference server
 * (`examples/servers/typescript/everything-server.ts` of the suite's repository, same version).
 *
 * It serves both eras the way the SDK documents for a server keeping 2025-era sessions next to a
 * modern endpoint: 2026-07-28 requests (the gateway's, which negotiates it) go to `createMcpHandler`;
 * 2025-era requests (the suite's own client, which speaks 2025-11-25) get a session each, with an event
 * store, as in the reference server: server-to-client requests, several streams per session and replay
 * after `Last-Event-ID` (for clients of 2025-11-25 and later, which get a priming event). Sampling and elicitation are written once as `input_required`
 * results: a 2026-07-28 client fulfils them and retries; on a 2025-era session the SDK's shim sends the
 * real `sampling/createMessage` / `elicitation/create` request and re-enters the handler.
 * Like the reference server, it refuses requests whose Host or Origin is not a loopback name (DNS
 * rebinding protection).
 */
export type ConformanceBackend = LoopbackServer

/** 1x1 red PNG and a minimal WAV, as in the reference server. */
export const image = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
export const audio = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="

/** SEP-1613: listed exactly as written (`$schema`, `$defs`, `additionalProperties` kept). */
export const jsonSchema2020 = {
  $schema: "https://json-schema.org/draft/2020-12/schema",
  type: "object" as const,
  $defs: {
    address: { type: "object", properties: { street: { type: "string" }, city: { type: "string" } } }
  },
  properties: { name: { type: "string" }, address: { $ref: "#/$defs/address" } },
  additionalProperties: false
}

/** SEP-1034: a default for every primitive type. */
export const defaultsSchema = {
  type: "object" as const,
  properties: {
    name: { type: "string" as const, description: "User name", default: "John Doe" },
    age: { type: "integer" as const, description: "User age", default: 30 },
    score: { type: "number" as const, description: "User score", default: 95.5 },
    status: {
      type: "string" as const,
      description: "User status",
      enum: ["active", "inactive", "pending"],
      default: "active"
    },
    verified: { type: "boolean" as const, description: "Verification status", default: true }
  },
  required: []
}

/** SEP-1330: the five enum shapes. */
export const enumsSchema = {
  type: "object" as const,
  properties: {
    untitledSingle: {
      type: "string" as const,
      description: "Select one option",
      enum: ["option1", "option2", "option3"]
    },
    titledSingle: {
      type: "string" as const,
      description: "Select one option with titles",
      oneOf: [
        { const: "value1", title: "First Option" },
        { const: "value2", title: "Second Option" },
        { const: "value3", title: "Third Option" }
      ]
    },
    legacyEnum: {
      type: "string" as const,
      description: "Select one option (legacy)",
      enum: ["opt1", "opt2", "opt3"],
      enumNames: ["Option One", "Option Two", "Option Three"]
    },
    untitledMulti: {
      type: "array" as const,
      description: "Select multiple options",
      minItems: 1,
      maxItems: 3,
      items: { type: "string" as const, enum: ["option1", "option2", "option3"] }
    },
    titledMulti: {
      type: "array" as const,
      description: "Select multiple options with titles",
      minItems: 1,
      maxItems: 3,
      items: {
        anyOf: [
          { const: "value1", title: "First Choice" },
          { const: "value2", title: "Second Choice" },
          { const: "value3", title: "Third Choice" }
        ]
      }
    }
  },
  required: []
}

const text = (value: string) => ({ content: [{ type: "text" as const, text: value }] })
const pause = (ms: number) => new Promise((done) => setTimeout(done, ms))

/** Every tool, resource and prompt of the server scenarios, on one server instance. */
export const registerConformance = (server: McpServer) => {
  const noArgs = z.object({})

  // tools-call-simple-text, -image, -audio, -embedded-resource, -mixed-content, -error
  server.registerTool(
    "test_simple_text",
    { description: "Tests simple text content response", inputSchema: noArgs },
    async () => text("This is a simple text response for testing.")
  )
  server.registerTool(
    "test_image_content",
    { description: "Tests image content response", inputSchema: noArgs },
    async () => ({ content: [{ type: "image", data: image, mimeType: "image/png" }] })
  )
  server.registerTool(
    "test_audio_content",
    { description: "Tests audio content response", inputSchema: noArgs },
    async () => ({ content: [{ type: "audio", data: audio, mimeType: "audio/wav" }] })
  )
  server.registerTool(
    "test_embedded_resource",
    { description: "Tests embedded resource content response", inputSchema: noArgs },
    async () => ({
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
    })
  )
  server.registerTool(
    "test_multiple_content_types",
    { description: "Tests response with multiple content types (text, image, resource)", inputSchema: noArgs },
    async () => ({
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
    })
  )
  server.registerTool(
    "test_error_handling",
    { description: "Tests error response handling", inputSchema: noArgs },
    async () => {
      throw new Error("This tool intentionally returns an error for testing")
    }
  )

  // tools-call-with-logging: three `info` messages, 50 ms apart (filtered by the caller's level).
  server.registerTool(
    "test_tool_with_logging",
    { description: "Tests tool that emits log messages during execution", inputSchema: noArgs },
    async (_args, ctx) => {
      await ctx.mcpReq.log("info", "Tool execution started")
      await pause(50)
      await ctx.mcpReq.log("info", "Tool processing data")
      await pause(50)
      await ctx.mcpReq.log("info", "Tool execution completed")
      return text("Tool with logging executed successfully")
    }
  )

  // tools-call-with-progress: 0, 50, 100 of 100, 50 ms apart, when the call carries a progress token.
  server.registerTool(
    "test_tool_with_progress",
    { description: "Tests tool that reports progress notifications", inputSchema: noArgs },
    async (_args, ctx) => {
      const progressToken = ctx.mcpReq._meta?.progressToken
      for (const progress of [0, 50, 100]) {
        if (progressToken !== undefined) {
          await ctx.mcpReq.notify({
            method: "notifications/progress",
            params: { progressToken, progress, total: 100, message: `Completed step ${progress} of 100` }
          })
        }
        if (progress < 100) await pause(50)
      }
      return text(String(progressToken))
    }
  )

  // server-sse-polling (SEP-1699): closes the call's SSE stream before answering; the client resumes
  // with Last-Event-ID and gets the result from the event store. Where there is no stream to close
  // (a 2026-07-28 request, or a 2025 client before 2025-11-25) it simply answers.
  server.registerTool(
    "test_reconnection",
    {
      description: "Tests SSE stream disconnection and client reconnection (SEP-1699)",
      inputSchema: noArgs
    },
    async (_args, ctx) => {
      ctx.http?.closeSSE?.()
      await pause(100)
      return text(
        "Reconnection test completed successfully. If you received this, the client properly reconnected after stream closure."
      )
    }
  )

  // tools-call-sampling and the three elicitation scenarios: `input_required` results.
  server.registerTool(
    "test_sampling",
    {
      description: "Tests server-initiated sampling (LLM completion request)",
      inputSchema: z.object({ prompt: z.string().describe("The prompt to send to the LLM") })
    },
    async ({ prompt }, ctx) => {
      const answer = ctx.mcpReq.inputResponses?.["sample"] as { content?: { text?: string } } | undefined
      if (answer === undefined) {
        return inputRequired({
          inputRequests: {
            sample: inputRequired.createMessage({
              messages: [{ role: "user", content: { type: "text", text: prompt } }],
              maxTokens: 100
            })
          }
        })
      }
      return text(`LLM response: ${answer.content?.text ?? "No response"}`)
    }
  )
  const elicitTool = (
    name: string,
    description: string,
    message: (args: Record<string, unknown>) => string,
    requestedSchema: Parameters<typeof inputRequired.elicit>[0]["requestedSchema"],
    inputSchema: z.ZodObject = noArgs,
    answerPrefix = "Elicitation completed"
  ) =>
    server.registerTool(name, { description, inputSchema }, async (args: Record<string, unknown>, ctx) => {
      const answer = ctx.mcpReq.inputResponses?.["input"] as { action?: string } | undefined
      if (answer === undefined) {
        return inputRequired({
          inputRequests: { input: inputRequired.elicit({ message: message(args), requestedSchema }) }
        })
      }
      const content = acceptedContent(ctx.mcpReq.inputResponses, "input") ?? {}
      return text(`${answerPrefix}: action=${answer.action}, content=${JSON.stringify(content)}`)
    })
  elicitTool(
    "test_elicitation",
    "Tests server-initiated elicitation (user input request)",
    (args) => String(args["message"]),
    {
      type: "object",
      properties: { response: { type: "string", description: "User's response" } },
      required: ["response"]
    },
    z.object({ message: z.string().describe("The message to show the user") }),
    "User response"
  )
  elicitTool(
    "test_elicitation_sep1034_defaults",
    "Tests elicitation with default values per SEP-1034",
    () => "Please review and update the form fields with defaults",
    defaultsSchema
  )
  elicitTool(
    "test_elicitation_sep1330_enums",
    "Tests elicitation with enum schema improvements per SEP-1330",
    () => "Please select options from the enum fields",
    enumsSchema as Parameters<typeof inputRequired.elicit>[0]["requestedSchema"]
  )

  // json-schema-2020-12 (SEP-1613)
  server.registerTool(
    "json_schema_2020_12_tool",
    {
      description: "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)",
      inputSchema: fromJsonSchema<Record<string, unknown>>(jsonSchema2020)
    },
    async (args) => text(`JSON Schema 2020-12 tool called with: ${JSON.stringify(args)}`)
  )

  // resources-list, -read-text, -read-binary, -templates-read, -subscribe, -unsubscribe
  server.registerResource(
    "static-text",
    "test://static-text",
    { title: "Static Text Resource", description: "A static text resource for testing", mimeType: "text/plain" },
    async () => ({
      contents: [
        { uri: "test://static-text", mimeType: "text/plain", text: "This is the content of the static text resource." }
      ]
    })
  )
  server.registerResource(
    "static-binary",
    "test://static-binary",
    {
      title: "Static Binary Resource",
      description: "A static binary resource (image) for testing",
      mimeType: "image/png"
    },
    async () => ({ contents: [{ uri: "test://static-binary", mimeType: "image/png", blob: image }] })
  )
  server.registerResource(
    "template",
    new ResourceTemplate("test://template/{id}/data", { list: undefined }),
    {
      title: "Resource Template",
      description: "A resource template with parameter substitution",
      mimeType: "application/json"
    },
    async (uri, { id }) => ({
      contents: [
        {
          uri: uri.toString(),
          mimeType: "application/json",
          text: JSON.stringify({ id, templateTest: true, data: `Data for ID: ${String(id)}` })
        }
      ]
    })
  )
  server.registerResource(
    "watched-resource",
    "test://watched-resource",
    { title: "Watched Resource", description: "A resource clients subscribe to", mimeType: "text/plain" },
    async () => ({
      contents: [{ uri: "test://watched-resource", mimeType: "text/plain", text: "Watched resource content" }]
    })
  )
  const subscriptions = new Set<string>()
  server.server.setRequestHandler("resources/subscribe", async (request) => {
    subscriptions.add(request.params.uri)
    return {}
  })
  server.server.setRequestHandler("resources/unsubscribe", async (request) => {
    subscriptions.delete(request.params.uri)
    return {}
  })

  // prompts-list, -get-simple, -get-with-args, -get-embedded-resource, -get-with-image; completion-complete
  server.registerPrompt(
    "test_simple_prompt",
    { title: "Simple Test Prompt", description: "A simple prompt without arguments" },
    async () => ({
      messages: [{ role: "user", content: { type: "text", text: "This is a simple prompt for testing." } }]
    })
  )
  server.registerPrompt(
    "test_prompt_with_arguments",
    {
      title: "Prompt With Arguments",
      description: "A prompt with required arguments",
      argsSchema: z.object({
        arg1: completable(z.string().describe("First test argument"), (value) =>
          ["paris", "park", "party"].filter((each) => each.startsWith(value))
        ),
        arg2: z.string().describe("Second test argument")
      })
    },
    async ({ arg1, arg2 }) => ({
      messages: [
        { role: "user", content: { type: "text", text: `Prompt with arguments: arg1='${arg1}', arg2='${arg2}'` } }
      ]
    })
  )
  server.registerPrompt(
    "test_prompt_with_embedded_resource",
    {
      title: "Prompt With Embedded Resource",
      description: "A prompt that includes an embedded resource",
      argsSchema: z.object({ resourceUri: z.string().describe("URI of the resource to embed") })
    },
    async ({ resourceUri }) => ({
      messages: [
        {
          role: "user",
          content: {
            type: "resource",
            resource: { uri: resourceUri, mimeType: "text/plain", text: "Embedded resource content for testing." }
          }
        },
        { role: "user", content: { type: "text", text: "Please process the embedded resource above." } }
      ]
    })
  )
  server.registerPrompt(
    "test_prompt_with_image",
    { title: "Prompt With Image", description: "A prompt that includes image content" },
    async () => ({
      messages: [
        { role: "user", content: { type: "image", data: image, mimeType: "image/png" } },
        { role: "user", content: { type: "text", text: "Please analyze the image above." } }
      ]
    })
  )
}

const createServer = () => {
  const server = new McpServer(
    { name: "mcp-conformance-test-server", version: "1.0.0" },
    {
      capabilities: {
        tools: { listChanged: true },
        resources: { subscribe: true, listChanged: true },
        prompts: { listChanged: true },
        logging: {},
        completions: {}
      }
    }
  )
  registerConformance(server)
  return server
}

/** An in-memory event store (SEP-1699 resumability), keyed `<stream>::<sequence>`. */
export const memoryEventStore = (): EventStore => {
  const events: Array<{ readonly id: string; readonly stream: string; readonly message: JSONRPCMessage }> = []
  return {
    storeEvent: async (stream, message) => {
      const id = `${stream}::${String(events.length).padStart(8, "0")}`
      events.push({ id, stream, message })
      return id
    },
    replayEventsAfter: async (lastEventId, { send }) => {
      const stream = lastEventId.slice(0, lastEventId.lastIndexOf("::"))
      for (const event of events) {
        if (event.stream === stream && event.id > lastEventId && Object.keys(event.message).length > 0) {
          await send(event.id, event.message)
        }
      }
      return stream
    }
  }
}

export const jsonError = (status: number, code: number, message: string) =>
  new Response(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code, message } }), {
    status,
    headers: { "content-type": "application/json" }
  })

export const startConformanceBackend = async (): Promise<ConformanceBackend> => {
  const modern = createMcpHandler(createServer, { legacy: "reject" })
  const sessions = new Map<string, WebStandardStreamableHTTPServerTransport>()
  const events = memoryEventStore()

  const legacy = async (request: Request): Promise<Response> => {
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

  const loopback = await serveLoopback(async (request) => {
    const refused =
      hostHeaderValidationResponse(request, localhostAllowedHostnames()) ??
      originValidationResponse(request, localhostAllowedOrigins())
    if (refused !== undefined) return refused
    return (await isLegacyRequest(request)) ? legacy(request) : modern.fetch(request)
  })
  const stopListening = loopback.stop
  return Object.assign(loopback, {
    stop: async () => {
      for (const transport of sessions.values()) await transport.close()
      sessions.clear()
      await modern.close()
      await stopListening()
    }
  })
}
