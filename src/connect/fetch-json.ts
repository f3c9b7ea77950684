import { Data } from "effect"

/** The most an answer from the gateway's metadata or token endpoint may be, counted as it arrives. */
export const ANSWER_LIMIT_BYTES = 64 * 1024
/** How long a metadata or token request may take, the answer's body included. */
export const ANSWER_TIME_LIMIT_MS = 10_000

/** The endpoint did not give a readable answer: no connection, a redirect, too slow, or too large. */
export class NoAnswer extends Data.TaggedError("NoAnswer")<{ readonly message: string }> {}

/**
 * One request to the gateway's discovery or token endpoints (docs/clients.md, "The bridge"): redirects
 * are refused rather than followed (an endpoint that moves is not the one the metadata named), the whole
 * exchange has {@link ANSWER_TIME_LIMIT_MS}, and the body is read while it streams in and refused past
 * {@link ANSWER_LIMIT_BYTES}. The body is parsed as JSON; `undefined` when it is not JSON.
 */
export const fetchJson = async (address: string, init: RequestInit): Promise<{ status: number; body: unknown }> => {
  try {
    const response = await fetch(address, {
      ...init,
      redirect: "error",
      signal: AbortSignal.timeout(ANSWER_TIME_LIMIT_MS)
    })
    const text = await readLimited(response)
    let body: unknown
    try {
      body = JSON.parse(text)
    } catch {
      body = undefined
    }
    return { status: response.status, body }
  } catch (error) {
    if (error instanceof NoAnswer) throw error
    throw new NoAnswer({ message: describe(error) })
  }
}

const readLimited = async (response: Response): Promise<string> => {
  const tooLarge = () => new NoAnswer({ message: `the answer is larger than ${ANSWER_LIMIT_BYTES / 1024} KiB` })
  const declared = Number(response.headers.get("content-length") ?? "0")
  if (declared > ANSWER_LIMIT_BYTES) {
    await response.body?.cancel().catch(() => {})
    throw tooLarge()
  }
  if (response.body === null) return ""
  const reader = response.body.getReader()
  const chunks: Array<Uint8Array> = []
  let size = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    size += value.byteLength
    if (size > ANSWER_LIMIT_BYTES) {
      await reader.cancel().catch(() => {})
      throw tooLarge()
    }
    chunks.push(value)
  }
  return Buffer.concat(chunks).toString("utf8")
}

/** fetch's own errors say only "fetch failed"; the cause says what happened (a redirect, a refused connection). */
const describe = (error: unknown): string => {
  if (!(error instanceof Error)) return String(error)
  if (error.name === "TimeoutError") return `no answer within ${ANSWER_TIME_LIMIT_MS / 1000} s`
  const cause = error.cause instanceof Error ? error.cause.message : undefined
  if (cause === "unexpected redirect") return "it answered with a redirect, which is not followed"
  return cause === undefined ? error.message : `${error.message} (${cause})`
}
