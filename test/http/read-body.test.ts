/**
 * Reading a request body (src/http/read-body.ts), whichever way it arrives: already complete in the
 * stream's buffer when it is read, or still arriving in pieces — the same text, the same limit.
 */
import { createServer, request, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { BodyNotRead } from "../../src/http/read-body.js"
import { readBodyText } from "../../src/http/read-body.js"

let server: Server
let port = 0
/** How the next request's body is read: its limit, and how long the handler waits before reading. */
let next = { limit: 1024, wait: 0 }

beforeAll(async () => {
  server = createServer((incoming, response) => {
    const { limit, wait } = next
    const read = () => {
      // Whether the whole body had arrived when it was read (the buffered path) or not (the events).
      const buffered = incoming.complete
      readBodyText(incoming, limit).then(
        (text) => response.end(JSON.stringify({ text, buffered })),
        (error: BodyNotRead) => response.end(JSON.stringify({ refused: error.reason, buffered }))
      )
    }
    setTimeout(read, wait)
  })
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done))
  port = (server.address() as AddressInfo).port
})
afterAll(() => server.close())

/** POSTs `pieces` (chunked), each written `gap` ms after the last; the server's answer. */
const post = (pieces: ReadonlyArray<Buffer>, gap: number) =>
  new Promise<Record<string, unknown>>((done, fail) => {
    const outgoing = request({ port, method: "POST", host: "127.0.0.1", headers: { "transfer-encoding": "chunked" } })
    outgoing.on("response", (answer) => {
      const chunks: Array<Buffer> = []
      answer.on("data", (chunk: Buffer) => chunks.push(chunk))
      answer.on("end", () => done(JSON.parse(Buffer.concat(chunks).toString()) as Record<string, unknown>))
    })
    outgoing.on("error", fail)
    const write = (at: number) => {
      if (at === pieces.length) return void outgoing.end()
      outgoing.write(pieces[at])
      setTimeout(() => write(at + 1), gap)
    }
    write(0)
  })

const text = "é€😀, split inside its characters"
const bytes = Buffer.from(text)
// Cut inside multi-byte characters: the pieces only make sense together.
const pieces = [bytes.subarray(0, 1), bytes.subarray(1, 5), bytes.subarray(5)]

describe("readBodyText", () => {
  it("reads a body already complete in the buffer and one still arriving in pieces to the same text", async () => {
    next = { limit: 1024, wait: 100 }
    expect(await post(pieces, 0)).toEqual({ text, buffered: true })
    next = { limit: 1024, wait: 0 }
    expect(await post(pieces, 30)).toEqual({ text, buffered: false })
  })

  it("refuses a body past the limit whether it is already buffered or still arriving", async () => {
    const ten = [Buffer.from("01234"), Buffer.from("56789")]
    next = { limit: 8, wait: 100 }
    expect(await post(ten, 0)).toEqual({ refused: "too_large", buffered: true })
    next = { limit: 8, wait: 0 }
    expect(await post(ten, 30)).toEqual({ refused: "too_large", buffered: false })
    next = { limit: 10, wait: 100 }
    expect(await post(ten, 0)).toEqual({ text: "0123456789", buffered: true })
  })
})
