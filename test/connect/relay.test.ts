/**
 * The bridge's relay (docs/clients.md): every message passes both ways between an MCP client and a
 * Streamable HTTP server — here a real SDK backend, so the relay alone is under test — including
 * progress notifications, cancellation (which closes the request's stream and reaches the server's
 * handler), JSON-RPC errors the server sends inside HTTP errors, a clear answer when a request
 * cannot be delivered at all, and one when the server ends a request's stream without answering it.
 */
import {
  Client,
  InMemoryTransport,
  type JSONRPCMessage,
  StreamableHTTPClientTransport
} from "@modelcontextprotocol/client"
import { afterAll, describe, expect, it } from "vitest"
import { NO_ANSWER_CODE, NOT_DELIVERED_CODE, relay } from "../../src/connect/relay.js"
import { alphaTools, startBackend, type TestBackend } from "../support/mcp-backends.js"
import { scriptedServer } from "../support/scripted-server.js"

const backends: Array<TestBackend> = []
afterAll(async () => {
  for (const backend of backends) await backend.stop()
})

const connectThroughRelay = async (url: string) => {
  const [clientSide, bridgeSide] = InMemoryTransport.createLinkedPair()
  const upstream = new StreamableHTTPClientTransport(new URL(url))
  const said: Array<string> = []
  await upstream.start()
  const finished = relay(bridgeSide, upstream, (line) => said.push(line))
  await bridgeSide.start()
  const client = new Client({ name: "relay-test", version: "1.0.0" })
  await client.connect(clientSide)
  return { client, finished, said }
}

describe("gateway connect: the relay", () => {
  it("passes requests, answers and progress notifications both ways", async () => {
    const backend = await startBackend("alpha", alphaTools)
    backends.push(backend)
    const { client, finished } = await connectThroughRelay(backend.url)
    const progress: Array<number> = []
    const result = await client.callTool(
      { name: "progress", arguments: { steps: 3 } },
      { onprogress: (update) => progress.push(update.progress) }
    )
    expect(result.content).toEqual([{ type: "text", text: "done 3" }])
    expect(progress).toEqual([1, 2, 3])
    expect((await client.listTools()).tools.map((tool) => tool.name)).toContain("slow")
    await client.close()
    // The client closing its side ends the relay.
    await finished
  })

  it("a cancelled call reaches the server's handler as an abort, and no answer is sent for it", async () => {
    const backend = await startBackend("alpha", alphaTools)
    backends.push(backend)
    const { client } = await connectThroughRelay(backend.url)
    const controller = new AbortController()
    const call = client.callTool({ name: "slow", arguments: { ms: 30_000 } }, { signal: controller.signal })
    // Once the server has the call (a later request on the same relay has come back), cancel it.
    await client.listTools()
    controller.abort("changed my mind")
    await expect(call).rejects.toThrow()
    await expect.poll(() => backend.aborted, { timeout: 5_000 }).toContain("slow")
    await client.close()
  })

  it("a request that cannot be delivered is answered with a JSON-RPC error saying why", async () => {
    const backend = await startBackend("alpha", alphaTools)
    backends.push(backend)
    const { client } = await connectThroughRelay(backend.url)
    await backend.stop()
    const refused = await client.listTools().then(
      () => undefined,
      (error: { code?: number; message: string }) => error
    )
    expect(refused?.code).toBe(NOT_DELIVERED_CODE)
    expect(refused?.message).toMatch(/The gateway bridge could not deliver the request: /)
    await client.close()
  })
  it("a request whose stream the server ends without answering is answered with -32603, and only that one", async () => {
    // Answers `ping` on its stream; for anything else sends a progress notification and ends the stream.
    const server = await scriptedServer((request, response) => {
      const message = JSON.parse(request.body) as { id: number; method: string }
      const event = (body: unknown) => `event: message\ndata: ${JSON.stringify(body)}\n\n`
      response.writeHead(200, { "content-type": "text/event-stream" })
      if (message.method === "ping") response.end(event({ jsonrpc: "2.0", id: message.id, result: {} }))
      else {
        const progress = { progressToken: message.id, progress: 1 }
        response.end(event({ jsonrpc: "2.0", method: "notifications/progress", params: progress }))
      }
    })
    try {
      const [clientSide, bridgeSide] = InMemoryTransport.createLinkedPair()
      const upstream = new StreamableHTTPClientTransport(new URL(`${server.origin}/mcp`))
      await upstream.start()
      const finished = relay(bridgeSide, upstream, () => {})
      await bridgeSide.start()
      const received: Array<JSONRPCMessage> = []
      clientSide.onmessage = (message) => received.push(message)
      await clientSide.start()
      const ids = () => received.flatMap((message) => ("id" in message ? [message.id] : []))
      await clientSide.send({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} })
      await clientSide.send({ jsonrpc: "2.0", id: 2, method: "ping" })
      await expect.poll(ids, { timeout: 5_000 }).toEqual(expect.arrayContaining([1, 2]))
      // A later request's answer comes after any stray second answer to the first two would have.
      await clientSide.send({ jsonrpc: "2.0", id: 3, method: "ping" })
      await expect.poll(ids, { timeout: 5_000 }).toContain(3)
      expect(ids().sort()).toEqual([1, 2, 3])
      expect(received).toContainEqual({
        jsonrpc: "2.0",
        id: 1,
        error: {
          code: NO_ANSWER_CODE,
          message:
            "The gateway ended the stream without answering the request; it may have run all the same — check " +
            "before repeating a change."
        }
      })
      expect(received).toContainEqual({ jsonrpc: "2.0", id: 2, result: {} })
      expect(received).toContainEqual(expect.objectContaining({ method: "notifications/progress" }))
      await clientSide.close()
      await finished
    } finally {
      await server.close()
    }
  })
})
