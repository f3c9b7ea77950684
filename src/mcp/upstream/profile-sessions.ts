import type { Dispatcher } from "undici"
import { type ClientProfile, capabilitiesOf } from "../calls/client-profile.js"
import { SseDecoder } from "../sse.js"
import type { BackendSession } from "./channel.js"

/** An `initialize` answer larger than this is refused: it is a handful of capabilities and names. */
const maxInitializeAnswer = 1024 * 1024

export interface ProfileSessionSettings {
  readonly connections: Dispatcher
  readonly origin: string
  readonly path: string
  /** The backend's credentials and fixed headers, with the session id and protocol version of `session`. */
  readonly headersFor: (session: BackendSession) => Promise<Record<string, string>>
  readonly clientInfo: { readonly name: string; readonly version: string }
  readonly timeoutMs: number
}

/**
 * Backend sessions of a 2025-era stateful backend that declare a caller's client capabilities
 * (src/mcp/calls/client-profile.ts), one per profile, opened on demand beside the MCP client's own
 * session (which declares none) and kept for the channel's life: a reconnect makes a new channel and
 * new sessions. A session the backend forgot is dropped, and the next call opens another.
 */
export class ProfileSessions {
  private readonly open = new Map<ClientProfile, Promise<BackendSession>>()

  constructor(private readonly settings: ProfileSessionSettings) {}

  /** The session for `profile` on a backend whose own session is `main`, opening it if need be. */
  session(main: BackendSession, profile: ClientProfile): Promise<BackendSession> {
    const known = this.open.get(profile)
    if (known !== undefined) return known
    const opening = this.initialize(main, profile)
    this.open.set(profile, opening)
    opening.catch(() => {
      if (this.open.get(profile) === opening) this.open.delete(profile)
    })
    return opening
  }

  /**
   * Forgets the session `opening` gave (the backend no longer knows it), at once, so the next call of
   * its profile opens another; a session opened since is kept.
   */
  drop(profile: ClientProfile, opening: Promise<BackendSession>): void {
    if (this.open.get(profile) === opening) this.open.delete(profile)
  }

  /** Whether any session was opened (or is being opened). */
  any(): boolean {
    return this.open.size > 0
  }

  /** The sessions opened so far (to end them when the channel closes). */
  async sessions(): Promise<ReadonlyArray<BackendSession>> {
    const settled = await Promise.allSettled(this.open.values())
    return settled.flatMap((each) => (each.status === "fulfilled" ? [each.value] : []))
  }

  private async initialize(main: BackendSession, profile: ClientProfile): Promise<BackendSession> {
    const { connections, origin, path, headersFor, clientInfo, timeoutMs } = this.settings
    const bare: BackendSession = { era: "legacy", protocolVersion: main.protocolVersion, sessionId: undefined }
    const signal = AbortSignal.timeout(timeoutMs)
    const params = { protocolVersion: main.protocolVersion, capabilities: capabilitiesOf(profile), clientInfo }
    const body = JSON.stringify({ jsonrpc: "2.0", id: "gw-initialize", method: "initialize", params })
    const answer = await connections.request({
      origin,
      path,
      method: "POST",
      headers: await headersFor(bare),
      body,
      signal
    })
    const sessionId = answer.headers["mcp-session-id"]
    const type = String(answer.headers["content-type"] ?? "")
      .split(";", 1)[0]!
      .trim()
      .toLowerCase()
    const text = await bounded(answer.body)
    if (answer.statusCode !== 200 || typeof sessionId !== "string" || sessionId === "") {
      throw new Error(`the backend answered initialize with HTTP ${answer.statusCode} and no session`)
    }
    const result = type === "text/event-stream" ? lastEventOf(text) : parse(text)
    const version = (result as { result?: { protocolVersion?: unknown } } | undefined)?.result?.protocolVersion
    if (version !== main.protocolVersion) throw new Error("the backend's initialize answer is not the one expected")
    const session: BackendSession = { era: "legacy", protocolVersion: main.protocolVersion, sessionId }
    const initialized = JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" })
    const done = await connections.request({
      origin,
      path,
      method: "POST",
      headers: await headersFor(session),
      body: initialized,
      signal
    })
    await done.body.dump()
    return session
  }
}

const bounded = async (body: AsyncIterable<Buffer> & { destroy?: () => void }): Promise<string> => {
  const chunks: Array<Buffer> = []
  let size = 0
  for await (const chunk of body) {
    size += chunk.length
    if (size > maxInitializeAnswer) {
      body.destroy?.()
      throw new Error("the backend's initialize answer is too large")
    }
    chunks.push(chunk)
  }
  return Buffer.concat(chunks).toString("utf8")
}

const parse = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** The JSON-RPC response among an SSE answer's events (the last one that parses as a response). */
const lastEventOf = (text: string): unknown => {
  let found: unknown
  const decoder = new SseDecoder((data) => {
    const message = parse(data)
    if (message !== undefined && typeof message === "object" && message !== null && "result" in message) found = message
  })
  decoder.push(text)
  decoder.push("\n\n")
  return found
}
