import type { Dispatcher } from "undici"

/**
 * One HTTP tool request over undici (docs/tool-sources.md, "Limits"): a deadline over the whole exchange
 * (redirects and the body included), at most `maxBytes` of body read, at most `maxRedirects` redirects
 * followed and only within the request's origin. Failures come back as a safe message: an error code,
 * never an error's text, a header, the query string or the body.
 */

export const maxRedirects = 3

export interface Outgoing {
  readonly origin: string
  /** Path and query. */
  readonly target: string
  readonly method: string
  readonly headers: Readonly<Record<string, string>>
  readonly body: string | undefined
}

export interface Limits {
  readonly timeoutMs: number
  readonly maxBytes: number
}

export type Sent =
  | {
      readonly ok: true
      readonly status: number
      readonly contentType: string | undefined
      readonly body: Buffer
      readonly method: string
    }
  | {
      readonly ok: false
      readonly reason:
        | "timeout"
        | "cancelled"
        | "too_large"
        | "redirect_refused"
        | "redirects"
        | "connect"
        | "tls"
        | "failed"
      readonly message: string
      /** A refused redirect's target origin (for the security event). */
      readonly redirectedTo?: string
    }

const redirectStatuses = new Set([301, 302, 303, 307, 308])

const tlsCode = /^(?:CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|ERR_TLS_|ERR_SSL_|HOSTNAME_MISMATCH)/

/** An error's code (Node's and undici's are plain identifiers), never its message. */
const codeOf = (error: unknown): string | undefined => {
  for (let here: unknown = error, depth = 0; here !== undefined && here !== null && depth < 4; depth++) {
    const code = (here as { code?: unknown }).code
    if (typeof code === "string" && /^[A-Z0-9_]{1,64}$/.test(code)) return code
    here = (here as { cause?: unknown }).cause
  }
  return undefined
}

const header = (headers: Record<string, string | Array<string> | undefined>, name: string): string | undefined => {
  const value = headers[name]
  return Array.isArray(value) ? value[0] : value
}

/** Drops an answer's body: its connection closes (an error listener, so the abort is not an uncaught error). */
const discard = (body: Dispatcher.ResponseData["body"]) => {
  body.on("error", () => {})
  body.destroy()
}

/** The whole body, or undefined (and the body dropped) once it passes `maxBytes`. Events, not `for await`: cheaper per chunk. */
const readBounded = (body: Dispatcher.ResponseData["body"], maxBytes: number) =>
  new Promise<Buffer | undefined>((resolve, reject) => {
    const chunks: Array<Buffer> = []
    let size = 0
    body.on("data", (chunk: Buffer) => {
      size += chunk.length
      if (size > maxBytes) {
        body.removeAllListeners("data")
        discard(body)
        resolve(undefined)
      } else chunks.push(chunk)
    })
    body.once("end", () => resolve(Buffer.concat(chunks, size)))
    body.once("error", reject)
  })

const seconds = (ms: number) => (ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`)

export const send = async (
  dispatcher: Dispatcher,
  outgoing: Outgoing,
  limits: Limits,
  /** The caller's cancellation and the fiber's interruption (AbortSignal.any costs more than the rest of a call). */
  signals: ReadonlyArray<AbortSignal>
): Promise<Sent> => {
  const deadline = new AbortController()
  let why: "timeout" | "cancelled" | undefined
  const timer = setTimeout(() => {
    why ??= "timeout"
    deadline.abort()
  }, limits.timeoutMs)
  const cancel = () => {
    why ??= "cancelled"
    deadline.abort()
  }
  for (const signal of signals) {
    if (signal.aborted) cancel()
    else signal.addEventListener("abort", cancel, { once: true })
  }
  let { origin, target, method, body } = outgoing
  try {
    for (let redirects = 0; ; redirects++) {
      const answer = await dispatcher.request({
        origin,
        path: target,
        method: method as Dispatcher.HttpMethod,
        headers: outgoing.headers as Record<string, string>,
        body: body ?? null,
        signal: deadline.signal,
        // The deadline above bounds the exchange; undici's own timers would only race it.
        headersTimeout: 0,
        bodyTimeout: 0
      })
      const location = header(answer.headers, "location")
      if (redirectStatuses.has(answer.statusCode) && location !== undefined) {
        discard(answer.body)
        let next: URL
        try {
          next = new URL(location, `${origin}${target}`)
        } catch {
          return { ok: false, reason: "failed", message: "the service redirected to an invalid location; not followed" }
        }
        if (next.origin !== origin)
          return {
            ok: false,
            reason: "redirect_refused",
            message: `the service redirected to another origin (${next.protocol === "https:" || next.protocol === "http:" ? next.origin : next.protocol}); not followed`,
            redirectedTo: next.protocol === "https:" || next.protocol === "http:" ? next.origin : next.protocol
          }
        if (redirects >= maxRedirects)
          return { ok: false, reason: "redirects", message: `the service redirected more than ${maxRedirects} times` }
        // As browsers do: 303 (and 301/302 after a POST) continue with GET and no body.
        if (
          (answer.statusCode === 303 && method !== "HEAD") ||
          ((answer.statusCode === 301 || answer.statusCode === 302) && method === "POST")
        ) {
          method = "GET"
          body = undefined
        }
        target = `${next.pathname}${next.search}`
        continue
      }
      const declared = Number(header(answer.headers, "content-length"))
      // A HEAD answer's content-length is the size of a body it does not send.
      if (method !== "HEAD" && Number.isFinite(declared) && declared > limits.maxBytes) {
        discard(answer.body)
        return tooLarge(limits.maxBytes)
      }
      const read = await readBounded(answer.body, limits.maxBytes)
      if (read === undefined) return tooLarge(limits.maxBytes)
      return {
        ok: true,
        status: answer.statusCode,
        contentType: header(answer.headers, "content-type"),
        body: read,
        method
      }
    }
  } catch (error) {
    if (why === "timeout")
      return { ok: false, reason: "timeout", message: `the service did not answer within ${seconds(limits.timeoutMs)}` }
    if (why === "cancelled") return { ok: false, reason: "cancelled", message: "the call was cancelled" }
    const code = codeOf(error)
    if (code !== undefined && tlsCode.test(code))
      return { ok: false, reason: "tls", message: `the TLS connection to ${origin} failed verification (${code})` }
    if (
      code === "ECONNREFUSED" ||
      code === "ENOTFOUND" ||
      code === "EAI_AGAIN" ||
      code === "ECONNRESET" ||
      code === "EHOSTUNREACH"
    )
      return { ok: false, reason: "connect", message: `could not reach ${origin} (${code})` }
    return {
      ok: false,
      reason: "failed",
      message: `the request to ${origin} failed${code === undefined ? "" : ` (${code})`}`
    }
  } finally {
    clearTimeout(timer)
    for (const signal of signals) signal.removeEventListener("abort", cancel)
  }
}

const tooLarge = (maxBytes: number): Sent => ({
  ok: false,
  reason: "too_large",
  message: `the service's answer is larger than ${maxBytes} bytes (the endpoint's max_answer_bytes)`
})
