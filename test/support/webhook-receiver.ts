import { createHmac, timingSafeEqual } from "node:crypto"
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from "node:http"
import { createServer, type Server } from "node:https"
import type { AddressInfo } from "node:net"
import type { TestCa } from "./test-ca.js"

/** How the receiver answers the next deliveries (the faults tests inject). */
export type ReceiverMode =
  /** 204: acknowledged. */
  | "accept"
  /** 503. */
  | "down"
  /** 302 to another path of the same receiver: a gateway following it would deliver there. */
  | "redirect"
  /** Waits this long before answering 204. */
  | { readonly delayMs: number }
  /** Records the delivery, then drops the connection without answering: the receipt is lost. */
  | "lose_receipt"
  /** Never answers (until the sender gives up and closes the connection). */
  | "hang"

/** A delivery the receiver accepted as genuine (signature valid, timestamp fresh). */
export interface Received {
  readonly eventId: string
  readonly body: Record<string, unknown>
  readonly raw: string
  readonly timestamp: string
  /** Not the first delivery of this `event_id`. */
  readonly duplicate: boolean
}

export interface WebhookReceiver {
  readonly url: string
  readonly port: number
  /** Every genuine delivery, in arrival order (duplicates included, flagged). */
  readonly received: Array<Received>
  /** Each distinct event once, in first-arrival order: what a deduplicating receiver keeps. */
  readonly events: () => ReadonlyArray<Received>
  /** Requests refused: bad signature, stale timestamp, anything but POST /hook, or a redirect target hit. */
  readonly refused: Array<string>
  /** Raw requests of every kind that reached the server (what was sent, even if refused). */
  readonly attempts: () => number
  mode: ReceiverMode
  close(): Promise<void>
}

/** How old a timestamp may be (either way) before the receiver refuses the delivery as a replay. */
export const FRESHNESS_SECONDS = 300

const verify = (secret: string, timestamp: string, raw: string, header: string | undefined) => {
  const expected = Buffer.from(
    `sha256=${createHmac("sha256", Buffer.from(secret, "utf8")).update(`${timestamp}.${raw}`).digest("hex")}`
  )
  const given = Buffer.from(header ?? "")
  return given.length === expected.length && timingSafeEqual(given, expected)
}

/**
 * A real HTTPS webhook receiver (certificate from `ca`, or `cert`/`key` of another CA for the
 * bad-certificate case) that does what docs/approvals.md asks of one: checks the HMAC signature over
 * `timestamp.body` in constant time, refuses a timestamp older or newer than five minutes (by `now`,
 * the test's clock), and deduplicates `event_id`. `plain: true` serves plain HTTP instead, to prove
 * nothing is ever sent in clear.
 */
export const startWebhookReceiver = (options: {
  readonly ca: Pick<TestCa, "cert" | "key">
  readonly secret: string
  readonly now?: () => number
  readonly port?: number
  readonly plain?: boolean
}): Promise<WebhookReceiver> => {
  const now = options.now ?? Date.now
  const seen = new Set<string>()
  let attempts = 0
  const receiver: Omit<WebhookReceiver, "url" | "port" | "close"> = {
    received: [],
    events: () => receiver.received.filter((one) => !one.duplicate),
    refused: [],
    attempts: () => attempts,
    mode: "accept"
  }
  const handle = (request: IncomingMessage, response: ServerResponse) => {
    attempts += 1
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      const raw = Buffer.concat(chunks).toString("utf8")
      if (request.method !== "POST" || request.url !== "/hook") {
        receiver.refused.push(`unexpected ${request.method} ${request.url}`)
        response.writeHead(404).end()
        return
      }
      const mode = receiver.mode
      if (mode === "hang") return
      if (mode === "down") return void response.writeHead(503).end()
      if (mode === "redirect") return void response.writeHead(302, { location: "/elsewhere" }).end()
      const timestamp = String(request.headers["x-gateway-timestamp"] ?? "")
      const signature = request.headers["x-gateway-signature"]
      if (!verify(options.secret, timestamp, raw, typeof signature === "string" ? signature : undefined)) {
        receiver.refused.push("bad signature")
        return void response.writeHead(401).end()
      }
      if (!/^\d+$/.test(timestamp) || Math.abs(Math.floor(now() / 1000) - Number(timestamp)) > FRESHNESS_SECONDS) {
        receiver.refused.push(`stale timestamp ${timestamp}`)
        return void response.writeHead(401).end()
      }
      const body = JSON.parse(raw) as Record<string, unknown>
      const eventId = String(body["event_id"])
      const answer = () => {
        receiver.received.push({ eventId, body, raw, timestamp, duplicate: seen.has(eventId) })
        seen.add(eventId)
        if (mode === "lose_receipt") return void request.socket.destroy()
        response.writeHead(204).end()
      }
      if (typeof mode === "object") setTimeout(answer, mode.delayMs)
      else answer()
    })
  }
  const server: Server | ReturnType<typeof createHttpServer> = options.plain
    ? createHttpServer(handle)
    : createServer({ cert: options.ca.cert, key: options.ca.key }, handle)
  return new Promise((resolve, reject) => {
    server.once("error", reject)
    server.listen(options.port ?? 0, "127.0.0.1", () => {
      const port = (server.address() as AddressInfo).port
      resolve(
        Object.assign(receiver, {
          url: `https://127.0.0.1:${port}/hook`,
          port,
          close: () =>
            new Promise<void>((done) => {
              server.closeAllConnections()
              server.close(() => done())
            })
        }) as WebhookReceiver
      )
    })
  })
}
