import { Effect, Either, type ParseResult, Schema } from "effect"
import { Backend, type BackendConfig, storedToolRules } from "../config/schema.js"
import type { SealerApi } from "../crypto/sealer.js"
import { isRecord } from "../json.js"
import { parseTemplate } from "./http/template.js"
import { HttpTool, OpenApiImport, type SourceKind, ToolGroup } from "./schema.js"

/**
 * The definitions of managed tool sources as stored and shown (docs/tool-sources.md, "Managed storage").
 * Every kind has `enabled` (default true): a disabled source stays stored and is left out of every
 * generation. A definition travels as its schema's encoded JSON (durations as `30s`, secrets as text);
 * at rest each secret is `{"sealed": "v1.…"}`, sealed for the record and the secret's place; shown, it is
 * `{"configured": true}`, which a write may send back to keep the stored secret — only while the secret's
 * destination is unchanged (`movedSecrets`).
 */

const enabled = { enabled: Schema.optionalWith(Schema.Boolean, { default: () => true }) }

// Tool rules as stored: a pattern saved before they were checked still loads (src/sources/checks.ts checks writes).
export const ManagedBackend = Schema.Struct({ ...Backend.fields, tool_rules: storedToolRules, ...enabled })
export const ManagedHttpTool = Schema.Struct({ ...HttpTool.fields, ...enabled })
export const ManagedOpenApiImport = Schema.Struct({ ...OpenApiImport.fields, ...enabled })
export const ManagedToolGroup = Schema.Struct({ ...ToolGroup.fields, ...enabled })

export type ManagedBackend = typeof ManagedBackend.Type
export type ManagedHttpTool = typeof ManagedHttpTool.Type
export type ManagedOpenApiImport = typeof ManagedOpenApiImport.Type
export type ManagedToolGroup = typeof ManagedToolGroup.Type

/** A decoded definition with its kind: what composition and the checks work on. */
export type ManagedSource =
  | { readonly kind: "backend"; readonly id: string; readonly value: ManagedBackend }
  | { readonly kind: "http_tool"; readonly id: string; readonly value: ManagedHttpTool }
  | { readonly kind: "openapi_import"; readonly id: string; readonly value: ManagedOpenApiImport }
  | { readonly kind: "tool_group"; readonly id: string; readonly value: ManagedToolGroup }

// biome-ignore lint/suspicious/noExplicitAny: one schema per kind, chosen at run time
export const schemaOf: Record<SourceKind, Schema.Schema<any, any>> = {
  backend: ManagedBackend,
  http_tool: ManagedHttpTool,
  openapi_import: ManagedOpenApiImport,
  tool_group: ManagedToolGroup
}

/** The kind's words in messages and paths. */
export const kindNames: Record<SourceKind, { readonly one: string; readonly path: string }> = {
  backend: { one: "backend", path: "backends" },
  http_tool: { one: "HTTP tool", path: "http-tools" },
  openapi_import: { one: "OpenAPI import", path: "openapi-imports" },
  tool_group: { one: "tool group", path: "tool-groups" }
}

export type Json = Record<string, unknown>

/** The value `{"configured": true}` a record shows for a secret, and a write sends to keep it. */
export const configured = { configured: true } as const
export const isConfiguredMarker = (value: unknown) =>
  isRecord(value) && value["configured"] === true && Object.keys(value).length === 1

/** A secret's place in an encoded definition: a key, and the key inside it. */
type Place = readonly [string, string]

const pointerOf = ([outer, inner]: Place) => `/${outer}/${inner.replaceAll("~", "~0").replaceAll("/", "~1")}`

/** Where the secrets of an encoded definition of `kind` are (fixed headers, credentials, OAuth secrets). */
export const secretPlaces = (kind: SourceKind, definition: Json): ReadonlyArray<Place> => {
  if (kind === "tool_group") return []
  const places: Array<Place> = []
  const headers = definition["headers"]
  if (isRecord(headers)) for (const name of Object.keys(headers)) places.push(["headers", name])
  const credentials = definition["credentials"]
  if (isRecord(credentials)) {
    for (const key of ["token", "password"]) if (key in credentials) places.push(["credentials", key])
  }
  const oauth = definition["oauth"]
  if (kind === "backend" && isRecord(oauth) && "client_secret" in oauth) places.push(["oauth", "client_secret"])
  return places
}

/** `definition` with the value at each secret place replaced by `replace(value, pointer)` (a copy). */
export const mapSecrets = <E>(
  kind: SourceKind,
  definition: Json,
  replace: (value: unknown, pointer: string) => Either.Either<unknown, E>
): Either.Either<Json, E> => {
  const copy: Json = { ...definition }
  for (const place of secretPlaces(kind, definition)) {
    const [outer, inner] = place
    const section = { ...(copy[outer] as Json) }
    const replaced = replace(section[inner], pointerOf(place))
    if (Either.isLeft(replaced)) return Either.left(replaced.left)
    section[inner] = replaced.right
    copy[outer] = section
  }
  return Either.right(copy)
}

/** The sealing context of a record's secret: bound to the record (or proposal) and the secret's place. */
export const recordContext = (id: string) => `managed_source:${id}`
export const proposalContext = (id: string) => `source_proposal:${id}`

/** Seals every secret of an encoded definition for `context`; the JSON text to store. */
export const sealDefinition = (sealer: SealerApi, kind: SourceKind, definition: Json, context: string): string =>
  JSON.stringify(
    Either.getOrThrow(
      mapSecrets(kind, definition, (value, pointer) =>
        Either.right({ sealed: sealer.seal(String(value), `${context}:${pointer}`) })
      )
    )
  )

/** A stored definition that does not open: altered, copied from another record, or another key. */
export class DefinitionUnreadable extends Error {}

/** The stored JSON text opened: every `{"sealed"}` back to its text. */
export const openDefinition = (sealer: SealerApi, kind: SourceKind, text: string, context: string) =>
  Effect.gen(function* () {
    const parsed: unknown = JSON.parse(text)
    if (!isRecord(parsed)) return yield* Effect.die(new DefinitionUnreadable(`${context}: not a JSON object`))
    const opened: Record<string, string> = {}
    for (const place of secretPlaces(kind, parsed)) {
      const sealed = (parsed[place[0]] as Json)[place[1]]
      if (!isRecord(sealed) || typeof sealed["sealed"] !== "string") {
        return yield* Effect.die(new DefinitionUnreadable(`${context}: a secret is not sealed`))
      }
      const pointer = pointerOf(place)
      const bytes = yield* sealer.open(sealed["sealed"], `${context}:${pointer}`).pipe(Effect.orDie)
      opened[pointer] = new TextDecoder().decode(bytes)
    }
    return Either.getOrThrow(mapSecrets(kind, parsed, (_, pointer) => Either.right(opened[pointer])))
  })

/** An encoded definition as shown: each secret `{"configured": true}`. */
export const maskDefinition = (kind: SourceKind, definition: Json): Json =>
  Either.getOrThrow(mapSecrets(kind, definition, () => Either.right(configured)))

/**
 * A write's definition with each `{"configured": true}` replaced by the stored secret at that place;
 * the pointer of one with nothing stored to keep.
 */
export const keepSecrets = (kind: SourceKind, written: Json, stored: Json | undefined): Either.Either<Json, string> => {
  const kept = new Map<string, unknown>()
  if (stored !== undefined) {
    mapSecrets(kind, stored, (value, pointer) => {
      kept.set(pointer, value)
      return Either.right(value)
    })
  }
  return mapSecrets(kind, written, (value, pointer) => {
    if (!isConfiguredMarker(value)) return Either.right(value)
    return kept.has(pointer) ? Either.right(kept.get(pointer)) : Either.left(pointer)
  })
}

/** The pointers of the secrets a write sends as `{"configured": true}` (to keep the stored ones). */
export const keptPointers = (kind: SourceKind, written: Json): ReadonlyArray<string> => {
  const pointers: Array<string> = []
  mapSecrets(kind, written, (value, pointer) => {
    if (isConfiguredMarker(value)) pointers.push(pointer)
    return Either.right(value)
  })
  return pointers
}

/** A URL template's literal origin (src/sources/http/template.ts); the text itself when it does not parse. */
const templateOrigin = (url: string) => {
  const parsed = parseTemplate(url)
  return parsed.ok ? parsed.template.origin : url
}

/**
 * Where the secret at `pointer` of a source goes, field by field: a backend's headers and credentials
 * to its `url`'s origin; its OAuth client secret to its `oauth.issuer` (the token endpoint is discovered
 * there), and the tokens it obtains to the `url`'s origin; an HTTP tool's secrets to the origin of
 * `tool.url`; an OpenAPI import's to the origins of its operations (`server_url`, or the document's
 * servers).
 */
export const secretDestination = (
  source: ManagedSource,
  pointer: string
): ReadonlyArray<{ readonly field: string; readonly destination: string }> => {
  switch (source.kind) {
    case "backend": {
      const url = { field: "url", destination: URL.parse(source.value.url)?.origin ?? source.value.url }
      return pointer === "/oauth/client_secret"
        ? [{ field: "oauth.issuer", destination: source.value.oauth?.issuer ?? "" }, url]
        : [url]
    }
    case "http_tool":
      return [{ field: "tool.url", destination: templateOrigin(source.value.tool.url) }]
    case "openapi_import":
      return [
        {
          field: "server_url (or the document's servers)",
          destination: [...new Set(source.value.tools.map((tool) => templateOrigin(tool.url)))].sort().join(" ")
        }
      ]
    case "tool_group":
      return []
  }
}

/**
 * The secrets a write keeps (`kept`, from `keptPointers`) whose destination it changes, each with the
 * field that moved it. A stored secret never follows a changed destination: the write must send it again.
 */
export const movedSecrets = (
  before: ManagedSource,
  after: ManagedSource,
  kept: ReadonlyArray<string>
): ReadonlyArray<{ readonly pointer: string; readonly field: string }> =>
  kept.flatMap((pointer) => {
    const was = secretDestination(before, pointer)
    const moved = secretDestination(after, pointer).find(
      (place) => !was.some((old) => old.field === place.field && old.destination === place.destination)
    )
    return moved === undefined ? [] : [{ pointer, field: moved.field }]
  })

/** Decodes an encoded definition of `kind` (stored ones were checked when written). */
export const decodeSource = (
  kind: SourceKind,
  definition: Json
): Either.Either<ManagedSource, ParseResult.ParseError> =>
  Either.map(
    Schema.decodeUnknownEither(schemaOf[kind], { onExcessProperty: "error" })(definition),
    (value) => ({ kind, id: String((value as { id: string }).id), value }) as ManagedSource
  )

/** The encoded JSON of a decoded definition (every default written out). */
export const encodeSource = (source: ManagedSource): Json =>
  Schema.encodeSync(schemaOf[source.kind])(source.value) as Json

/** A YAML backend as the managed backend it becomes when managed storage is initialized. */
export const fromYamlBackend = (backend: BackendConfig): ManagedSource => ({
  kind: "backend",
  id: backend.id,
  value: { ...backend, enabled: true }
})

/** A managed backend as the generation runs it (the YAML backend's shape). */
export const toBackendConfig = (backend: ManagedBackend): BackendConfig => {
  const { enabled: _enabled, ...rest } = backend
  return rest
}
