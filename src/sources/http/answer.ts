import type { CallToolResult } from "@modelcontextprotocol/client"
import { isRecord } from "../../json.js"

/**
 * How an HTTP tool's answer becomes MCP content (docs/tool-sources.md, "Answers"):
 * - JSON (`application/json`, `*+json`): a `text` block with the JSON, and `structuredContent` when it
 *   is an object;
 * - `text/*` and XML: a `text` block, decoded with the declared charset (UTF-8 when none or unknown);
 * - `image/*` and `audio/*`: an image or audio block (base64);
 * - no content type: text when the body is well-formed UTF-8 without NUL bytes, refused otherwise;
 * - any other type: refused (`isError`), saying the type and size — binary downloads are not tool output.
 * A status of 400 or more is `isError` with the status and a bounded, cleaned excerpt of the body. Every
 * text handed back has the endpoint's secrets (fixed header values, credentials) replaced by
 * `[redacted]`, in case the service echoes what it was sent.
 */

/** Characters of an error body quoted back. */
export const maxExcerpt = 1024

/** Secrets shorter than this are not searched for (they would match ordinary text). */
export const minScrubbed = 8

const redacted = "[redacted]"

export const scrubText = (text: string, secrets: ReadonlyArray<string>): string => {
  let out = text
  for (const secret of secrets) if (out.includes(secret)) out = out.replaceAll(secret, redacted)
  return out
}

/** Whether a JSON text holds a secret as written or as JSON escapes it (`/` as `\/` is not one of those). */
const mayHoldSecret = (text: string, secrets: ReadonlyArray<string>): boolean =>
  secrets.some(
    (secret) => text.includes(secret) || text.includes(JSON.stringify(secret).slice(1, -1)) || text.includes("\\u")
  )

const scrubValue = (value: unknown, secrets: ReadonlyArray<string>): unknown => {
  if (typeof value === "string") return scrubText(value, secrets)
  if (Array.isArray(value)) return value.map((item) => scrubValue(item, secrets))
  if (isRecord(value)) {
    const out: Record<string, unknown> = {}
    for (const [key, item] of Object.entries(value)) out[scrubText(key, secrets)] = scrubValue(item, secrets)
    return out
  }
  return value
}

interface MediaType {
  readonly essence: string
  readonly charset: string | undefined
}

const mediaType = (header: string | undefined): MediaType | undefined => {
  if (header === undefined) return undefined
  const [essence = "", ...params] = header.split(";")
  const charset = params
    .map((param) => param.trim())
    .find((param) => param.toLowerCase().startsWith("charset="))
    ?.slice(8)
    .replace(/^"|"$/g, "")
  const clean = essence.trim().toLowerCase()
  // The service's own words reach messages: only a well-formed type/subtype does.
  return {
    essence: /^[a-z0-9!#$&^_.+-]{1,64}\/[a-z0-9!#$&^_.+-]{1,64}$/.test(clean) ? clean : "an invalid content type",
    charset
  }
}

const isJson = (essence: string) => /^application\/(?:[a-z0-9.+-]+\+)?json$/.test(essence)
const isText = (essence: string) => essence.startsWith("text/") || /^application\/(?:[a-z0-9.+-]+\+)?xml$/.test(essence)

const decode = (body: Buffer, charset: string | undefined): string => {
  try {
    return new TextDecoder(charset ?? "utf-8").decode(body)
  } catch {
    return new TextDecoder("utf-8").decode(body)
  }
}

const wellFormedUtf8 = (body: Buffer): string | undefined => {
  if (body.includes(0)) return undefined
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(body)
  } catch {
    return undefined
  }
}

const refused = (text: string): CallToolResult => ({ content: [{ type: "text", text }], isError: true })

/** Control characters other than tab and newline, which a quoted body must not carry into logs or UIs. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const controls = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F\u2028\u2029]/g

/** A bounded, cleaned quote of an error body, or what it is when it is not text. */
const excerpt = (body: Buffer, type: MediaType | undefined, secrets: ReadonlyArray<string>): string => {
  if (body.length === 0) return "(no body)"
  const textual = type === undefined || isJson(type.essence) || isText(type.essence)
  const text = textual ? decode(body, type?.charset) : undefined
  if (text === undefined) return `(${body.length} bytes of ${type?.essence ?? "unknown type"})`
  const clean = scrubText(text, secrets).replace(controls, " ")
  return clean.length > maxExcerpt ? `${clean.slice(0, maxExcerpt)}…` : clean
}

export interface Answer {
  readonly status: number
  readonly contentType: string | undefined
  readonly body: Buffer
  readonly method: string
}

export const toolResult = (answer: Answer, secrets: ReadonlyArray<string>): CallToolResult => {
  const type = mediaType(answer.contentType)
  if (answer.status >= 400) return refused(`HTTP ${answer.status}: ${excerpt(answer.body, type, secrets)}`)
  if (answer.method === "HEAD" || answer.body.length === 0)
    return { content: [{ type: "text", text: `HTTP ${answer.status} (no content)` }] }
  if (type !== undefined && isJson(type.essence)) {
    const text = decode(answer.body, type.charset)
    let parsed: unknown
    try {
      parsed = JSON.parse(text)
    } catch {
      return refused(`the service answered ${type.essence} that is not valid JSON`)
    }
    // Most answers hold no secret: then the service's own text is the text block, and nothing is copied.
    const clean = !mayHoldSecret(text, secrets)
    const value = clean ? parsed : scrubValue(parsed, secrets)
    const json = clean ? text : JSON.stringify(value)
    return isRecord(value)
      ? { content: [{ type: "text", text: json }], structuredContent: value }
      : { content: [{ type: "text", text: json }] }
  }
  if (type !== undefined && isText(type.essence))
    return { content: [{ type: "text", text: scrubText(decode(answer.body, type.charset), secrets) }] }
  if (type !== undefined && (type.essence.startsWith("image/") || type.essence.startsWith("audio/"))) {
    const kind = type.essence.startsWith("image/") ? "image" : "audio"
    return { content: [{ type: kind, data: answer.body.toString("base64"), mimeType: type.essence }] }
  }
  if (type === undefined) {
    const text = wellFormedUtf8(answer.body)
    if (text !== undefined) return { content: [{ type: "text", text: scrubText(text, secrets) }] }
    return refused(
      `the service answered ${answer.body.length} bytes of no declared type that are not text; not passed on`
    )
  }
  return refused(
    `the service answered ${type.essence} (${answer.body.length} bytes), which an HTTP tool does not pass on`
  )
}
