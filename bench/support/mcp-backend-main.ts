/**
 * The MCP backend the `mcp-*` suites measure against, run as its own process (`node --import tsx`):
 * one server per port in BENCH_PORTS, each with an `echo` tool and BENCH_TOOLS filler tools.
 *
 * It uses the server SDK 2.x the way a lean production server would: `createMcpHandler` over a
 * low-level `Server` whose handlers answer from a list built once. A backend that rebuilt 500 zod
 * schemas per request would make both paths slow and hide what the gateway costs.
 */
import { createMcpHandler, Server, type Tool } from "@modelcontextprotocol/server"
import { serveFetch } from "../../src/demo/http-bridge.js"

const ports = (process.env["BENCH_PORTS"] ?? "").split(",").filter((port) => port !== "")
const fillerCount = Number(process.env["BENCH_TOOLS"] ?? "0")

const filler = (at: number): Tool => ({
  name: `tool_${String(at).padStart(4, "0")}`,
  description: `Benchmark filler tool ${at}: looks up records matching a query and returns at most limit of them.`,
  inputSchema: {
    type: "object",
    properties: {
      query: { type: "string", description: "What to look for" },
      limit: { type: "integer", minimum: 1, maximum: 100, description: "How many records at most" }
    },
    required: ["query"]
  }
})

const echo: Tool = {
  name: "echo",
  description: "Returns its text argument",
  inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] }
}

const tools: ReadonlyArray<Tool> = [echo, ...Array.from({ length: fillerCount }, (_, at) => filler(at))]

const makeServer = () => {
  const server = new Server({ name: "bench-backend", version: "1.0.0" }, { capabilities: { tools: {}, logging: {} } })
  server.setRequestHandler("tools/list", () => ({ tools: [...tools] }))
  server.setRequestHandler("tools/call", async (request, ctx) => {
    const text = request.params.arguments?.["text"]
    // `notify: n`: a streaming call — n progress notifications (when asked for) and n log messages first.
    const notify = Math.min(100, Number(request.params.arguments?.["notify"] ?? 0) || 0)
    const progressToken = ctx.mcpReq._meta?.progressToken
    for (let step = 1; step <= notify; step++) {
      if (progressToken !== undefined) {
        await ctx.mcpReq.notify({
          method: "notifications/progress",
          params: { progressToken, progress: step, total: notify }
        })
      }
      await ctx.mcpReq.notify({ method: "notifications/message", params: { level: "info", data: `step ${step}` } })
    }
    return { content: [{ type: "text", text: typeof text === "string" ? text : "" }] }
  })
  return server
}

for (const port of ports) {
  await serveFetch(createMcpHandler(makeServer).fetch, "127.0.0.1", Number(port))
}
process.stderr.write("listening\n")
