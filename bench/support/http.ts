import { request } from "node:http"
import { createServer } from "node:net"
import type { Child } from "./process.js"
import { sleep } from "./process.js"

/** A port that was free a moment ago; the servers under test bind it next. */
export const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
  })

export interface Reply {
  readonly status: number
  readonly headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>
  readonly body: string
}

/** One GET on a fresh connection (no agent), so start-up polls never reuse a socket. */
export const get = (url: string, timeoutMs = 2_000) =>
  new Promise<Reply>((resolve, reject) => {
    const req = request(url, { agent: false, timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = []
      res.on("data", (chunk: Buffer) => chunks.push(chunk))
      res.on("end", () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString("utf8") })
      )
      res.on("error", reject)
    })
    req.on("timeout", () => req.destroy(new Error(`GET ${url} timed out`)))
    req.on("error", reject)
    req.end()
  })

const POLL_INTERVAL_MS = 5

/**
 * Polls `url` until it answers 200 and returns the milliseconds since `child` was spawned.
 * Refused connections on loopback fail in well under a millisecond, so a 5 ms poll adds at most that.
 */
export const msUntil200 = async (url: string, child: Child, timeoutMs: number): Promise<number> => {
  const deadline = child.spawnedAt + timeoutMs
  while (performance.now() < deadline) {
    if (child.hasExited()) throw new Error(`${child.name} exited before ${url} answered 200\n${child.tail()}`)
    const reply = await get(url, 1_000).catch(() => undefined)
    if (reply?.status === 200) return performance.now() - child.spawnedAt
    await sleep(POLL_INTERVAL_MS)
  }
  throw new Error(`${child.name}: ${url} did not answer 200 within ${timeoutMs} ms\n${child.tail()}`)
}
