import { Effect } from "effect"
import { type Html, html } from "../../../auth/pages/html.js"
import { isRecord } from "../../../json.js"
import { Backends } from "../../../mcp/upstream/backends.js"
import { kindNames } from "../../../sources/definitions.js"
import type { SourceKind } from "../../../sources/schema.js"
import { type SourceRecordOf, type SourceWriteRefused, sourceWrites } from "../../../sources/writes.js"
import { MAX_BODY_BYTES } from "../../body.js"
import { requestId } from "../../errors.js"
import { MAX_IMPORT_BODY_BYTES } from "../../sources.js"
import type { ConsoleAnswer, ConsoleRequest, ConsoleRoute, ConsoleSection } from "../route.js"
import { formRevision } from "./forms.js"
import { jsonBlock, jsonForEditing, param, problem, shown, when } from "./parts.js"

/**
 * The console's pages of managed tool sources (docs/console.md, "Tool sources, approvals and audit"):
 * per kind a list, a record with its definition (secrets only as configured) and its published
 * tools, and forms to create, change (with the revision read: a stale one is a 412) and delete. Every
 * read and write is the Management API's own (src/sources/writes.ts); with configuration review on, a
 * create or change becomes a proposal and the page shows it with its review link.
 */

const titles: Readonly<Record<SourceKind, { readonly many: string; readonly one: string }>> = {
  backend: { many: "Backends", one: "Backend" },
  tool_group: { many: "Tool groups", one: "Tool group" },
  http_tool: { many: "HTTP tools", one: "HTTP tool" },
  openapi_import: { many: "OpenAPI imports", one: "OpenAPI import" }
}

export const sourceKinds: ReadonlyArray<SourceKind> = ["backend", "tool_group", "http_tool", "openapi_import"]

const basePath = (kind: SourceKind) => `/console/${kindNames[kind].path}`
export const sourcePath = (kind: SourceKind, id: string) => `${basePath(kind)}/${encodeURIComponent(id)}`

const page = (title: string, body: Html): ConsoleAnswer => ({ _tag: "Page", title, body })

const refused = <A, R>(effect: Effect.Effect<A, SourceWriteRefused, R>) =>
  Effect.catchTag(effect, "SourceWriteRefused", (refusal) => problem(refusal.status, refusal.message))

class NulInDefinition extends Error {}

/**
 * What a definition too large for the console says: 1 MiB, the API's limit for every kind but an
 * OpenAPI import, whose document (up to 32 MiB) goes by URL or through the API or `gateway admin`.
 */
const tooLarge = (kind: SourceKind) =>
  kind === "openapi_import"
    ? `definition: larger than 1 MiB, the most the console takes. Name the document by URL (source.url), or send the import through the Management API (POST /api/v1/openapi-imports, up to ${MAX_IMPORT_BODY_BYTES / 1024 / 1024} MiB) or \`gateway admin openapi-imports create\`.`
    : "definition: larger than 1 MiB, the most a definition may be."

/** The `definition` field: one JSON object, at most 1 MiB (the API's limit, but for an import's document). */
const definitionOf = (kind: SourceKind, form: URLSearchParams) =>
  Effect.gen(function* () {
    const text = form.get("definition") ?? ""
    if (text.trim() === "") return yield* problem(400, "definition: required, a JSON object.")
    if (Buffer.byteLength(text) > MAX_BODY_BYTES) return yield* problem(413, tooLarge(kind))
    let parsed: unknown
    try {
      parsed = JSON.parse(text, (key, value) => {
        if (key.includes("\u0000") || (typeof value === "string" && value.includes("\u0000"))) {
          throw new NulInDefinition()
        }
        return value
      })
    } catch (error) {
      if (error instanceof NulInDefinition) {
        return yield* problem(400, "definition: holds a NUL character (\\u0000), which no field accepts.")
      }
      // The position only: the parser's message quotes the text, which may hold a secret.
      const at = /position (\d+)/.exec(String(error))
      return yield* problem(400, `definition: not valid JSON${at === null ? "" : ` (at character ${at[1]})`}.`)
    }
    if (!isRecord(parsed)) return yield* problem(400, "definition: must be a JSON object.")
    return parsed
  })

const actorOf = (request: ConsoleRequest) =>
  Effect.map(requestId, (id) => ({ userId: request.admin.userId, requestId: id }))

/** What the change form starts from: the definition as read; an import's derived tools are not sent. */
const editable = (record: SourceRecordOf) => {
  if (record.kind !== "openapi_import") return record.definition
  const { tools: _tools, document_sha256: _sha, ...rest } = record.definition
  return rest
}

const definitionField = (kind: SourceKind, value: string) =>
  html`<label for="definition">Definition (JSON)</label>
<textarea id="definition" name="definition" rows="16" cols="80" spellcheck="false" aria-describedby="definition-help" required>${value}</textarea>
<p id="definition-help" class="muted">The fields of docs/tool-sources.md. A secret shown as {"configured": true} keeps its stored value; send a new value to replace it. At most 1 MiB${kind === "openapi_import" ? html`: a larger OpenAPI document is named by URL (<code>source.url</code>) or imported through the Management API or <code>gateway admin openapi-imports create</code> (up to 32 MiB)` : ""}.</p>`

/** The list of a kind, and the form that creates one (on the list: `/<kind>/new` could be an id). */
const listRoute = (kind: SourceKind): ConsoleRoute => ({
  method: "GET",
  path: basePath(kind),
  handler: (request) =>
    Effect.gen(function* () {
      const list = yield* (yield* sourceWrites(kind)).list
      const title = titles[kind].many
      return page(
        title,
        html`${list.managed ? "" : html`<p class="notice" id="not-managed">Managed storage is not initialized: the backends listed come from the YAML configuration. The first write imports them (docs/tool-sources.md).</p>`}
${
  list.items.length === 0
    ? html`<p id="empty">No ${kindNames[kind].one} yet.</p>`
    : html`<table id="sources"><caption>${title}</caption>
<thead><tr><th scope="col">Id</th><th scope="col">Enabled</th><th scope="col">Revision</th><th scope="col">Updated</th><th scope="col">Updated by</th></tr></thead>
<tbody>${list.items.map(
        (record) => html`<tr><th scope="row"><a href="${sourcePath(kind, record.id)}">${shown(record.id)}</a></th>
<td>${record.definition["enabled"] === false ? "no" : "yes"}</td><td>${record.revision}</td><td>${when(record.updated_at)}</td><td>${record.updated_by === null ? "—" : shown(record.updated_by)}</td></tr>`
      )}</tbody></table>`
}
<section aria-labelledby="create-heading"><h2 id="create-heading">New ${kindNames[kind].one}</h2>
<form method="post" action="${basePath(kind)}">${request.csrfField}
${definitionField(kind, '{\n  "id": ""\n}')}
<button type="submit">Create</button></form></section>`
      )
    })
})

/** A write's answer: the record's page, or (review on) the proposal's page with its review link. */
const afterWrite = (kind: SourceKind, result: SourceRecordOf | { readonly approval_id: string }, done: string) =>
  "approval_id" in result
    ? ({
        _tag: "SeeOther",
        location: `/console/proposals/${encodeURIComponent(result.approval_id)}`,
        notice: "The change waits for a security reviewer: nothing changed yet."
      } as const)
    : ({ _tag: "SeeOther", location: sourcePath(kind, result.id), notice: done } as const)

const createRoute = (kind: SourceKind): ConsoleRoute => ({
  method: "POST",
  path: basePath(kind),
  handler: (request) =>
    Effect.gen(function* () {
      const definition = yield* definitionOf(kind, request.form)
      const writes = yield* sourceWrites(kind)
      const result = yield* refused(writes.create(definition, yield* actorOf(request)))
      return afterWrite(kind, result, `${titles[kind].one} created.`)
    })
})

/** The tools the serving generation publishes from this source: name, original name, read or write. */
const catalogOf = (id: string) =>
  Effect.map(Backends, (backends) => {
    const index = backends.index()
    return index.tools.filter((tool) => tool.gateway === undefined && index.endpoints[tool.endpoint]?.id === id)
  })

const showRoute = (kind: SourceKind): ConsoleRoute => ({
  method: "GET",
  path: `${basePath(kind)}/:id`,
  handler: (request) =>
    Effect.gen(function* () {
      const id = param(request.params, "id")
      const record = yield* refused((yield* sourceWrites(kind)).read(id))
      const tools = yield* catalogOf(id)
      const one = titles[kind].one
      return page(
        `${one} ${id}`,
        html`<p>Revision ${record.revision} · updated ${when(record.updated_at)}${record.updated_by === null ? "" : html` by ${shown(record.updated_by)}`}</p>
<section aria-labelledby="definition-heading"><h2 id="definition-heading">Definition</h2>
<p class="muted">Secrets are shown only as configured.</p>${jsonBlock(record.definition)}</section>
<section aria-labelledby="catalog-heading"><h2 id="catalog-heading">Published tools</h2>
${
  tools.length === 0
    ? html`<p id="no-tools">No published tools in the serving configuration${kind === "backend" ? " (an unconnected backend has none yet: see its status)" : ""}.</p>`
    : html`<table id="catalog"><caption>Tools published from ${shown(id)}</caption>
<thead><tr><th scope="col">Name</th><th scope="col">Original name</th><th scope="col">Access</th><th scope="col">Write approval</th></tr></thead>
<tbody>${tools.map(
        (
          tool
        ) => html`<tr><th scope="row"><code>${shown(tool.key)}</code></th><td><code>${shown(tool.member?.tool ?? tool.original)}</code></td>
<td>${tool.write ? "write" : "read"}</td><td>${tool.approval === undefined ? "—" : "required"}</td></tr>`
      )}</tbody></table>`
}</section>
<section aria-labelledby="change-heading"><h2 id="change-heading">Change</h2>
<form method="post" action="${sourcePath(kind, id)}">${request.csrfField}
<input type="hidden" name="revision" value="${record.revision}">
${definitionField(kind, jsonForEditing(editable(record)))}
<button type="submit">Save changes</button></form></section>
<section aria-labelledby="delete-heading"><h2 id="delete-heading">Delete</h2>
<form method="post" action="${sourcePath(kind, id)}/delete">${request.csrfField}
<input type="hidden" name="revision" value="${record.revision}">
<p>Deleting applies at once, also when configuration review is on.</p>
<button type="submit">Delete ${kindNames[kind].one} ${shown(id)}</button></form></section>
<p><a href="${basePath(kind)}">${titles[kind].many}</a></p>`
      )
    })
})

const updateRoute = (kind: SourceKind): ConsoleRoute => ({
  method: "POST",
  path: `${basePath(kind)}/:id`,
  handler: (request) =>
    Effect.gen(function* () {
      const id = param(request.params, "id")
      const revision = yield* formRevision(request.form)
      const definition = yield* definitionOf(kind, request.form)
      const writes = yield* sourceWrites(kind)
      const result = yield* refused(writes.update(id, revision, definition, yield* actorOf(request)))
      return afterWrite(kind, result, `${titles[kind].one} saved.`)
    })
})

const deleteRoute = (kind: SourceKind): ConsoleRoute => ({
  method: "POST",
  path: `${basePath(kind)}/:id/delete`,
  handler: (request) =>
    Effect.gen(function* () {
      const id = param(request.params, "id")
      const revision = yield* formRevision(request.form)
      const writes = yield* sourceWrites(kind)
      yield* refused(writes.remove(id, revision, yield* actorOf(request)))
      return { _tag: "SeeOther", location: basePath(kind), notice: `${titles[kind].one} ${id} deleted.` } as const
    })
})

export const toolSourcesSection: ConsoleSection = {
  nav: sourceKinds.map((kind) => ({ label: titles[kind].many, path: basePath(kind) })),
  routes: sourceKinds.flatMap((kind) => [
    listRoute(kind),
    createRoute(kind),
    showRoute(kind),
    updateRoute(kind),
    deleteRoute(kind)
  ])
}
