import { Duration, Effect } from "effect"
import { Agent, request } from "undici"
import { OpenApiInvalid } from "./errors.js"

/** The most bytes of a document an import reads, from a URL or in a request (docs/tool-sources.md). */
export const MAX_DOCUMENT_BYTES = 32 * 1024 * 1024
const FETCH_TIMEOUT = Duration.seconds(30)
const MAX_REDIRECTS = 5

export interface FetchLimits {
  readonly maxBytes: number
  readonly timeout: Duration.DurationInput
}

const refuse = (message: string) => new OpenApiInvalid({ pointer: "", message })

/**
 * The import's URL: https only (plain http, even to loopback, would let anyone on the path choose the
 * tools), no credentials in it (they would be stored and shown with the import).
 */
export const checkDocumentUrl = (text: string): Effect.Effect<URL, OpenApiInvalid> => {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return Effect.fail(refuse("the document's URL is not a URL"))
  }
  if (url.protocol !== "https:") return Effect.fail(refuse("the document's URL must be https"))
  if (url.username !== "" || url.password !== "") {
    return Effect.fail(refuse("the document's URL may not hold credentials"))
  }
  url.hash = ""
  return Effect.succeed(url)
}

/**
 * Fetches an OpenAPI document over HTTPS with undici: redirects followed only within the URL's origin,
 * at most `maxBytes` read (a larger declared length is refused before reading, a longer body stopped
 * where it passes the limit), the whole exchange within `timeout`. Answers the text and the URL it
 * came from (relative server URLs resolve against it). Messages name no header or body content.
 */
export const fetchDocument = (
  url: URL,
  ca: string | undefined,
  limits: FetchLimits = { maxBytes: MAX_DOCUMENT_BYTES, timeout: FETCH_TIMEOUT }
): Effect.Effect<{ readonly text: string; readonly url: string }, OpenApiInvalid> =>
  Effect.acquireUseRelease(
    Effect.sync(
      () =>
        new Agent({
          // Explicit: NODE_TLS_REJECT_UNAUTHORIZED=0 in the environment must not turn verification off.
          connect: { rejectUnauthorized: true, ...(ca === undefined ? {} : { ca }) }
        })
    ),
    (agent) =>
      Effect.tryPromise({
        try: (signal) => fetchWith(agent, url, limits.maxBytes, signal),
        catch: (error) =>
          error instanceof OpenApiInvalid ? error : refuse(`fetching the document failed (${describe(error)})`)
      }).pipe(
        Effect.timeoutFail({
          duration: limits.timeout,
          onTimeout: () => refuse("fetching the document took too long")
        })
      ),
    (agent) => Effect.promise(() => agent.destroy().catch(() => undefined))
  )

const fetchWith = async (agent: Agent, start: URL, maxBytes: number, signal: AbortSignal) => {
  let url = start
  for (let redirects = 0; ; redirects += 1) {
    const answer = await request(url, {
      dispatcher: agent,
      method: "GET",
      signal,
      headers: { accept: "application/json, application/yaml;q=0.9, text/yaml;q=0.8, */*;q=0.1" }
    })
    const location = answer.headers.location
    if (answer.statusCode >= 300 && answer.statusCode < 400 && location !== undefined) {
      await answer.body.dump()
      let next: URL
      try {
        next = new URL(Array.isArray(location) ? (location[0] ?? "") : location, url)
      } catch {
        throw refuse("the document's URL redirected to something that is not a URL")
      }
      if (next.origin !== start.origin) throw refuse("the document's URL redirected to another origin")
      if (redirects + 1 > MAX_REDIRECTS) throw refuse("the document's URL redirected too many times")
      url = next
      continue
    }
    if (answer.statusCode < 200 || answer.statusCode >= 300) {
      await answer.body.dump()
      throw refuse(`fetching the document answered HTTP ${answer.statusCode}`)
    }
    const declared = Number(answer.headers["content-length"])
    if (Number.isFinite(declared) && declared > maxBytes) {
      answer.body.destroy()
      throw refuse(`the document is larger than ${maxBytes} bytes`)
    }
    const chunks: Array<Buffer> = []
    let size = 0
    for await (const chunk of answer.body as AsyncIterable<Buffer>) {
      size += chunk.length
      if (size > maxBytes) {
        answer.body.destroy()
        throw refuse(`the document is larger than ${maxBytes} bytes`)
      }
      chunks.push(chunk)
    }
    return { text: new TextDecoder("utf-8", { fatal: true }).decode(Buffer.concat(chunks, size)), url: url.href }
  }
}

/** What went wrong, by kind: an error's code, never its message (which may quote what was received). */
const describe = (error: unknown): string => {
  if (error instanceof TypeError && error.message.includes("encoded data")) return "the document is not UTF-8"
  const code = (error as { readonly code?: unknown } | undefined)?.code
  return typeof code === "string" && /^[A-Z0-9_]+$/.test(code) ? code : "connection failed"
}
