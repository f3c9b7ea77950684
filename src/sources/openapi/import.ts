import { Effect } from "effect"
import type { ToolRule } from "../../config/schema.js"
import type { HttpToolSpec } from "../schema.js"
import { OpenApiInvalid } from "./errors.js"
import { checkDocumentUrl, fetchDocument, MAX_DOCUMENT_BYTES } from "./fetch-document.js"
import type { Skipped } from "./operations.js"
import { parseAndMap } from "./parse.js"
import { isObject } from "./pointer.js"

export { OpenApiInvalid } from "./errors.js"
export type { Skipped } from "./operations.js"

export interface OpenApiImported {
  readonly tools: ReadonlyArray<HttpToolSpec>
  readonly document_sha256: string
  /** GET/HEAD tools in a read rule, the rest in a write rule: used when the import gives no tool_rules. */
  readonly tool_rules: ReadonlyArray<typeof ToolRule.Type>
  readonly title: string
  readonly version: string
  /** Operations, parameters and request bodies a tool cannot send, left out, and why. */
  readonly skipped: ReadonlyArray<Skipped>
}

export interface OpenApiInput {
  readonly source: { readonly url: string } | { readonly document: unknown }
  readonly server_url?: string
  /** PEM CA certificates to trust when fetching `source.url`; the system roots otherwise. */
  readonly ca?: string
}

const tooLarge = () =>
  new OpenApiInvalid({ pointer: "", message: `the document is larger than ${MAX_DOCUMENT_BYTES} bytes` })

/** The document's text: fetched, given as text, or (an object) written as JSON. */
const documentText = (
  source: OpenApiInput["source"],
  ca: string | undefined
): Effect.Effect<{ readonly text: string; readonly url?: string }, OpenApiInvalid> => {
  if ("url" in source) return Effect.flatMap(checkDocumentUrl(source.url), (url) => fetchDocument(url, ca))
  const { document } = source
  if (typeof document === "string") {
    return Buffer.byteLength(document, "utf8") > MAX_DOCUMENT_BYTES
      ? Effect.fail(tooLarge())
      : Effect.succeed({ text: document })
  }
  if (!isObject(document)) {
    return Effect.fail(new OpenApiInvalid({ pointer: "", message: "the document must be an object or its text" }))
  }
  return Effect.suspend(() => {
    let text: string
    try {
      text = JSON.stringify(document)
    } catch {
      return Effect.fail(new OpenApiInvalid({ pointer: "", message: "the document is not JSON" }))
    }
    return Buffer.byteLength(text, "utf8") > MAX_DOCUMENT_BYTES ? Effect.fail(tooLarge()) : Effect.succeed({ text })
  })
}

/** GET/HEAD tools published read-only, the others published as writes. */
const defaultRules = (tools: ReadonlyArray<HttpToolSpec>): ReadonlyArray<typeof ToolRule.Type> => {
  const reads = tools.filter((tool) => tool.method === "GET" || tool.method === "HEAD").map((tool) => tool.name)
  const writes = tools.filter((tool) => tool.method !== "GET" && tool.method !== "HEAD").map((tool) => tool.name)
  return [
    ...(reads.length === 0 ? [] : [{ tools: reads, publish: true, write: false }]),
    ...(writes.length === 0 ? [] : [{ tools: writes, publish: true, write: true }])
  ]
}

/** An OpenAPI 3.0 or 3.1 document (≤ 32 MiB), its `$ref`s resolved, as HTTP tools (docs/tool-sources.md). */
export const importOpenApi = (input: OpenApiInput): Effect.Effect<OpenApiImported, OpenApiInvalid> =>
  Effect.gen(function* () {
    const { text, url } = yield* documentText(input.source, input.ca)
    // Parsed, validated and mapped to tools on the import's worker thread (parse.ts).
    const { tools, skipped, sha256, title, version } = yield* parseAndMap(text, {
      serverUrl: input.server_url,
      documentUrl: url
    })
    return { tools, document_sha256: sha256, tool_rules: defaultRules(tools), title, version, skipped }
  })
