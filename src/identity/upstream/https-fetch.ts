import { request } from "node:https"

/** Discovery documents, key sets, token and UserInfo answers are a few KiB; a larger answer is refused. */
export const MAX_UPSTREAM_ANSWER_BYTES = 256 * 1024
/** One exchange with the upstream, connection included. */
export const UPSTREAM_TIMEOUT_MS = 10_000

export interface UpstreamFetchOptions {
  /** PEM trust anchors replacing the system roots; undefined: Node's default trust. */
  readonly ca: string | undefined
  readonly timeoutMs?: number
  readonly maxBytes?: number
}

interface UpstreamRequest {
  readonly method?: string
  readonly headers?: ConstructorParameters<typeof Headers>[0]
  readonly body?: unknown
  readonly signal?: AbortSignal | null
}

/**
 * The `fetch` every exchange with the upstream identity provider goes through (discovery, keys, token,
 * UserInfo): HTTPS only, certificate and host name always verified (against `ca` when given), no
 * redirect followed (a 3xx is handed back as it is), bounded in time and in size. Answers a web
 * `Response`, as oauth4webapi's `customFetch` expects.
 */
export const upstreamFetch =
  (options: UpstreamFetchOptions) =>
  (url: string, init: UpstreamRequest = {}) =>
    new Promise<Response>((done, fail) => {
      const target = new URL(url)
      if (target.protocol !== "https:")
        return fail(new TypeError(`only https is used with the upstream (${target.origin})`))
      const limit = options.maxBytes ?? MAX_UPSTREAM_ANSWER_BYTES
      const signal = AbortSignal.any([
        AbortSignal.timeout(options.timeoutMs ?? UPSTREAM_TIMEOUT_MS),
        ...(init.signal ? [init.signal] : [])
      ])
      const headers = Object.fromEntries(new Headers(init.headers ?? {}).entries())
      const body = init.body ?? undefined
      if (body !== undefined && typeof body !== "string" && !(body instanceof URLSearchParams)) {
        return fail(new TypeError("only text and form bodies are sent to the upstream"))
      }
      const outgoing = request(
        target,
        {
          method: init.method ?? "GET",
          headers,
          signal,
          // Explicit: NODE_TLS_REJECT_UNAUTHORIZED=0 in the environment must not turn verification off.
          rejectUnauthorized: true,
          ...(options.ca === undefined ? {} : { ca: options.ca })
        },
        (incoming) => {
          const chunks: Array<Buffer> = []
          let size = 0
          let tooLarge = false
          incoming.on("data", (chunk: Buffer) => {
            size += chunk.length
            if (size <= limit) return void chunks.push(chunk)
            if (tooLarge) return
            tooLarge = true
            fail(new Error(`the upstream answered more than ${limit} bytes`))
            outgoing.destroy()
          })
          incoming.once("end", () => {
            if (tooLarge) return
            const answer = new Headers()
            for (const [name, value] of Object.entries(incoming.headers)) {
              if (typeof value === "string") answer.set(name, value)
              else if (Array.isArray(value)) for (const item of value) answer.append(name, item)
            }
            const status = incoming.statusCode ?? 502
            const nullBody = status === 204 || status === 304
            done(new Response(nullBody ? null : Buffer.concat(chunks), { status, headers: answer }))
          })
          incoming.once("error", fail)
        }
      )
      outgoing.once("error", (error) => fail(signal.aborted ? new Error("the upstream did not answer in time") : error))
      outgoing.end(body === undefined ? undefined : String(body))
    })
