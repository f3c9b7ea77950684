import { createHash, createPublicKey, verify } from "node:crypto"
import { appendFileSync, writeFileSync } from "node:fs"
import { createServer, type Server } from "node:https"
import type { AddressInfo } from "node:net"
import type { TestCa } from "./test-ca.js"

/**
 * An audit-archive receiver as docs/audit-archive.md ("Shipping") describes one, over HTTPS with a test
 * CA: it checks each envelope's hash and signature and that it extends its chain (the next sequence, the
 * previous hash), appends the exact request body and a line end to its file, and answers the receipt. A
 * redelivery of the entry it already holds is answered with the same receipt and not stored twice.
 * Switches make it misbehave: `down` (every request answered 503 without reading it), `loseReceipt` (store,
 * then drop the connection before answering), `wrongReceipt` (answer a receipt of another hash),
 * `resetReused` (reset the connection of the next request that comes on one used before, once).
 */
export interface ArchiveReceiver {
  readonly url: string
  readonly file: string
  /** Every request body received, in order, refused or not. */
  readonly received: Array<string>
  /** Why requests were refused, in order. */
  readonly refusals: Array<string>
  down: boolean
  loseReceipt: boolean
  wrongReceipt: boolean
  resetReused: boolean
  /** TLS connections accepted so far. */
  readonly connections: number
  last(): { readonly sequence: number; readonly hash: string }
  /** Makes the receiver hold a chain up to `sequence` of its own (as after a restore of the gateway's database). */
  holdsAlready(sequence: number, hash: string): void
  close(): Promise<void>
}

export const startArchiveReceiver = async (
  ca: TestCa,
  file: string,
  publicKeys: Readonly<Record<string, string>>,
  options: { readonly cert?: string; readonly key?: string; readonly port?: number } = {}
): Promise<ArchiveReceiver> => {
  writeFileSync(file, "")
  const keys = new Map(
    Object.entries(publicKeys).map(([id, x]) => [
      id,
      createPublicKey({
        key: { kty: "OKP", crv: "Ed25519", x: Buffer.from(x, "base64").toString("base64url") },
        format: "jwk"
      })
    ])
  )
  let last = { sequence: 0, hash: "0".repeat(64) }
  const state = {
    url: "",
    file,
    received: [] as Array<string>,
    refusals: [] as Array<string>,
    down: false,
    loseReceipt: false,
    wrongReceipt: false,
    connections: 0,
    resetReused: false,
    last: () => last,
    holdsAlready: (sequence: number, hash: string) => {
      last = { sequence, hash }
    }
  }
  const refuse = (reason: string) => {
    state.refusals.push(reason)
    return reason
  }
  /** The receipt to answer, or why the body is refused. */
  const accept = (body: string): { sequence: number; hash: string } | { conflict: string } | string => {
    let envelope: { entry?: unknown; hash?: unknown; signature?: unknown }
    try {
      envelope = JSON.parse(body)
    } catch {
      return refuse("not JSON")
    }
    const { entry, hash, signature } = envelope
    if (typeof entry !== "string" || typeof hash !== "string" || typeof signature !== "string") {
      return refuse("not an envelope")
    }
    const digest = createHash("sha256").update(entry, "latin1").digest()
    if (digest.toString("hex") !== hash) return refuse("hash")
    const fields = JSON.parse(entry) as { sequence: number; previous_hash: string; key_id: string }
    const key = keys.get(fields.key_id)
    if (key === undefined || !verify(null, digest, key, Buffer.from(signature, "base64"))) return refuse("signature")
    if (fields.sequence === last.sequence && hash === last.hash) return last
    // A sequence it holds with another entry: a conflict (409), as docs/audit-archive.md asks.
    if (fields.sequence <= last.sequence) return { conflict: `sequence ${fields.sequence} is held` }
    if (fields.sequence !== last.sequence + 1) return refuse(`sequence ${fields.sequence} after ${last.sequence}`)
    if (fields.previous_hash !== last.hash) return refuse("broken link")
    appendFileSync(file, `${body}\n`)
    last = { sequence: fields.sequence, hash }
    return last
  }
  const served = new WeakSet<object>()
  const server: Server = createServer(
    { cert: options.cert ?? ca.cert, key: options.key ?? ca.key },
    (request, response) => {
      if (state.resetReused && served.has(request.socket)) {
        state.resetReused = false
        request.socket.destroy()
        return
      }
      served.add(request.socket)
      if (state.down) {
        response.writeHead(503).end()
        request.resume()
        return
      }
      const chunks: Array<Buffer> = []
      request.on("data", (chunk: Buffer) => chunks.push(chunk))
      request.on("end", () => {
        const body = Buffer.concat(chunks).toString("utf8")
        state.received.push(body)
        const receipt = accept(body)
        if (typeof receipt === "string") {
          response.writeHead(422, { "content-type": "text/plain" }).end(receipt)
          return
        }
        if ("conflict" in receipt) {
          state.refusals.push(receipt.conflict)
          response.writeHead(409, { "content-type": "text/plain" }).end(receipt.conflict)
          return
        }
        if (state.loseReceipt) {
          request.socket.destroy()
          return
        }
        const answer = state.wrongReceipt ? { ...receipt, hash: "f".repeat(64) } : receipt
        response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(answer))
      })
    }
  )
  server.on("secureConnection", () => {
    state.connections += 1
  })
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, "127.0.0.1", resolve))
  state.url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/archive`
  return Object.assign(state, {
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  })
}
