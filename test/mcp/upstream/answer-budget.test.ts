/**
 * The gateway-wide budget of memory held for backend answers (docs/operations.md, "Memory held for
 * backend answers"; `server.max_answer_bytes_in_flight`): a real MCP backend sends large answers to
 * concurrent calls, held back until the test lets them finish. A call that would pass the budget
 * fails at once with a clear error, logged once (rate-limited); the others complete; every byte is
 * given back after, and the next calls succeed. Both ways an answer comes: JSON with a declared
 * length (refused before a byte is read) and an SSE event that grows (refused as it passes).
 */

import { type IncomingMessage, request } from "node:http"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as z from "zod/v4"
import { AnswerBudgetTag } from "../../../src/mcp/upstream/answer-budget.js"
import { LogCapture } from "../../support/logs.js"
import { startBackend, type TestBackend } from "../../support/mcp-backends.js"
import { connectClient } from "../../support/mcp-clients.js"
import { startTestGateway, type TestGateway } from "../../support/mcp-gateway.js"

/** A promise and what resolves it (Node 20 has no Promise.withResolvers). */
const opened = () => {
  let resolve = () => {}
  const promise = new Promise<void>((done) => {
    resolve = done
  })
  return { promise, resolve }
}

const MiB = 1024 * 1024
/** The smallest budget the configuration allows: one answer of the per-call maximum. */
const budget = 32 * MiB
/** Two of these fit in the budget, three do not. */
const answerSize = 12 * MiB

let backend: TestBackend
let gateway: TestGateway
const logs = new LogCapture()
/** Answers wait for this before their last bytes; `release` lets every waiting one finish. */
let gate = opened()
/** Bytes of answers the backend has sent so far. */
let sent = 0

const answerText = (id: unknown) =>
  `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"content":[{"type":"text","text":"${"x".repeat(answerSize)}"}]}}`

/** A body that sends all but the last byte of `text` at once and the rest when the gate opens. */
const heldBack = (text: string) => {
  const bytes = Buffer.from(text)
  const waiting = gate.promise
  let step = 0
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (step++ === 0) {
        sent += bytes.length - 1
        return controller.enqueue(bytes.subarray(0, bytes.length - 1))
      }
      await waiting
      controller.enqueue(bytes.subarray(bytes.length - 1))
      controller.close()
    }
  })
}

beforeAll(async () => {
  backend = await startBackend(
    "big",
    (server) => {
      for (const name of ["json", "sse", "small"]) {
        server.registerTool(name, { inputSchema: z.object({}) }, async () => ({
          content: [{ type: "text", text: name }]
        }))
      }
    },
    {
      intercept: (body) => {
        const request = body as { method?: string; id?: unknown; params?: { name?: string } }
        if (request.method !== "tools/call") return undefined
        const tool = request.params?.name
        if (tool === "json") {
          const text = answerText(request.id)
          return new Response(heldBack(text), {
            headers: { "content-type": "application/json", "content-length": String(Buffer.byteLength(text)) }
          })
        }
        if (tool === "sse") {
          return new Response(heldBack(`event: message\ndata: ${answerText(request.id)}\n\n`), {
            headers: { "content-type": "text/event-stream" }
          })
        }
        return undefined
      }
    }
  )
  gateway = await startTestGateway({
    logs,
    patch: {
      server: { max_answer_bytes_in_flight: budget },
      backends: [{ id: "big", url: backend.url, allow_insecure_http: true, tool_rules: [{ tools: ["*"] }] }]
    }
  })
})
afterAll(async () => {
  gate.resolve()
  await gateway?.close()
  await backend?.stop()
})

const held = () => gateway.run(Effect.map(AnswerBudgetTag, (answers) => answers.held))

const textOf = (result: unknown) => (result as { content: Array<{ text: string }> }).content[0]!.text

describe("the gateway-wide budget of backend answers", () => {
  for (const kind of ["json", "sse"] as const) {
    it(`${kind}: a call whose answer would pass the budget fails at once with a clear error; the others complete; memory is given back and the next calls succeed`, async () => {
      gate = opened()
      const client = await connectClient(gateway.mcpUrl, await gateway.token())
      const name = `big__${kind}`
      const call = () =>
        client.callTool({ name, arguments: {} }).then(
          (result) => ({ ok: true as const, text: textOf(result) }),
          (error: Error & { code?: number }) => ({ ok: false as const, code: error.code, message: error.message })
        )
      // Two answers are being read (each held back by its last byte): 24 MiB of the 32 held.
      const first = call()
      await expect.poll(held, { timeout: 10_000 }).toBeGreaterThanOrEqual(answerSize - 1)
      const second = call()
      await expect.poll(held, { timeout: 10_000 }).toBeGreaterThanOrEqual(2 * answerSize - 2)
      const sentBefore = sent
      // A third would pass it: refused while the other two are still held, not after they finish.
      const third = await call()
      expect(third).toEqual({
        ok: false,
        code: -32603,
        message: expect.stringContaining(
          `Backend "big"'s answer was dropped: the gateway is holding as many large answers as it may at once. The call may have run; try again shortly.`
        )
      })
      expect(await held()).toBeLessThanOrEqual(budget)
      expect(sent).toBeGreaterThan(sentBefore)
      gate.resolve()
      for (const done of [await first, await second]) {
        expect(done.ok).toBe(true)
        expect(done.ok && done.text.length).toBe(answerSize)
      }
      // Everything given back: the count is zero, and the next calls, large ones at once too, succeed.
      await expect.poll(held, { timeout: 5_000 }).toBe(0)
      const again = await Promise.all([call(), call()])
      expect(again.map((each) => each.ok)).toEqual([true, true])
      expect(textOf(await client.callTool({ name: "big__small", arguments: {} }))).toBe("small")
      expect(await held()).toBe(0)
      await client.close()
    })
  }

  it("a large answer stays counted until its caller has read it: a caller that stops reading holds it, and gives it back as it reads", async () => {
    gate = opened()
    gate.resolve()
    const body = JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: "big__json", arguments: {} }
    })
    const token = await gateway.token()
    const response = await new Promise<IncomingMessage>((resolve, reject) => {
      const req = request(gateway.mcpUrl, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-protocol-version": "2025-11-25",
          authorization: `Bearer ${token}`
        }
      })
      req.on("response", resolve)
      req.on("error", reject)
      req.end(body)
    })
    // Not read: the answer waits in the gateway's buffers, and stays counted.
    response.pause()
    await new Promise((done) => setTimeout(done, 300))
    expect(await held()).toBeGreaterThanOrEqual(answerSize)
    let size = 0
    response.on("data", (chunk: Buffer) => {
      size += chunk.length
    })
    response.resume()
    await new Promise((done) => response.on("end", done))
    expect(size).toBeGreaterThan(answerSize)
    await expect.poll(held, { timeout: 5_000 }).toBe(0)
  })

  it("refusals are logged as backend.answer_budget_exceeded, at most once per 30 s, with the backend and the limit", () => {
    // Both tests above were refused once each, within the same 30 s: one line.
    const lines = logs.events("backend.answer_budget_exceeded")
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatchObject({ level: "warn", backend: "big", limit_bytes: budget })
    expect(lines[0]?.["held_bytes"]).toBeGreaterThanOrEqual(2 * answerSize - 2)
  })
})
