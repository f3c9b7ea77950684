import { Effect } from "effect"
import { type Html, html } from "../../../auth/pages/html.js"
import { type AccessEntry, Permissions, type Role } from "../../../policy/permissions.js"
import { ConsoleProblem } from "../route.js"
import { decodeFields, lines } from "./forms.js"

/**
 * A permission group's permission object (docs/access-policy.md, "Permission object") as form fields:
 * roles as checkboxes, scopes one per line, and one fieldset per access entry (`access.N.…`) plus an
 * empty one to add an entry; an entry whose endpoint is left empty is removed. Read back into the
 * object the Management API takes, and decoded by the same schema.
 */

const ROLES: ReadonlyArray<{ readonly role: Role; readonly label: string }> = [
  { role: "admin", label: "Administrator (manages the gateway)" },
  { role: "approver", label: "Approver (reviews write requests)" },
  { role: "security_reviewer", label: "Security reviewer (reviews configuration changes)" }
]

/** Access entries one form can carry: the schema's limit, and one more to add. */
const MAX_ENTRIES = 257

const entryFields = (index: number, entry: AccessEntry | undefined, endpointsList: string): Html => {
  const name = (field: string) => `access.${index}.${field}`
  const id = (field: string) => `access-${index}-${field}`
  return html`<fieldset><legend>${entry === undefined ? "Add an access entry" : `Access entry ${index + 1}`}</legend>
<label for="${id("endpoint")}">Endpoint id${entry === undefined ? "" : " (empty removes this entry)"}</label>
<input type="text" id="${id("endpoint")}" name="${name("endpoint_id")}" value="${entry?.endpoint_id ?? ""}" list="${endpointsList}" maxlength="63">
<label for="${id("tools")}">Tools, one per line (* alone: every tool of the endpoint)</label>
<textarea id="${id("tools")}" name="${name("tools")}" rows="3" cols="40">${(entry?.tools ?? []).join("\n")}</textarea>
<label><input type="checkbox" name="${name("allow_write_requests")}" value="on"${entry?.allow_write_requests ? html` checked` : ""}> Allow write requests (approval rules still apply)</label>
<label for="${id("prompts")}">Prompts, one per line</label>
<textarea id="${id("prompts")}" name="${name("prompts")}" rows="2" cols="40">${(entry?.prompts ?? []).join("\n")}</textarea>
<label><input type="checkbox" name="${name("read_resources")}" value="on"${entry?.read_resources ? html` checked` : ""}> Read resources</label>
<label><input type="checkbox" name="${name("subscribe")}" value="on"${entry?.subscribe ? html` checked` : ""}> Subscribe to list changes</label>
<label for="${id("rules")}">Argument conditions (JSON: [{"argument": "/path", "allowed_values": ["&hellip;"]}])</label>
<textarea id="${id("rules")}" name="${name("resource_rules")}" rows="2" cols="40">${JSON.stringify(entry?.resource_rules ?? [])}</textarea>
</fieldset>`
}

/** The fields of `permissions` (inside a form); `endpoints`: the endpoint ids suggested. */
export const permissionFields = (
  permissions: Permissions,
  endpoints: ReadonlyArray<string>
): Html => html`<fieldset><legend>Roles</legend>
${ROLES.map(
  ({ role, label }) =>
    html`<label><input type="checkbox" name="role" value="${role}"${permissions.roles.includes(role) ? html` checked` : ""}> ${label}</label>`
)}
</fieldset>
<label for="scopes">Scopes, one per line</label>
<textarea id="scopes" name="scopes" rows="3" cols="40">${permissions.scopes.join("\n")}</textarea>
<datalist id="endpoint-ids">${endpoints.map((id) => html`<option value="${id}"></option>`)}</datalist>
${permissions.access.map((entry, index) => entryFields(index, entry, "endpoint-ids"))}
${permissions.access.length < MAX_ENTRIES - 1 ? entryFields(permissions.access.length, undefined, "endpoint-ids") : ""}`

const entryOf = (form: URLSearchParams, index: number) =>
  Effect.gen(function* () {
    const field = (name: string) => `access.${index}.${name}`
    const rulesText = (form.get(field("resource_rules")) ?? "").trim()
    let rules: unknown = []
    if (rulesText !== "") {
      try {
        rules = JSON.parse(rulesText)
      } catch {
        return yield* new ConsoleProblem({
          status: 400,
          message: `access[${index}].resource_rules: not valid JSON`
        })
      }
    }
    return {
      endpoint_id: (form.get(field("endpoint_id")) ?? "").trim(),
      tools: lines(form.get(field("tools"))),
      allow_write_requests: form.has(field("allow_write_requests")),
      resource_rules: rules,
      prompts: lines(form.get(field("prompts"))),
      read_resources: form.has(field("read_resources")),
      subscribe: form.has(field("subscribe"))
    }
  })

/** The permission object a form's fields describe, decoded as the API decodes one (the field named on a problem). */
export const permissionsOf = (form: URLSearchParams) =>
  Effect.gen(function* () {
    const access: Array<unknown> = []
    for (let index = 0; index < MAX_ENTRIES && form.has(`access.${index}.endpoint_id`); index++) {
      const entry = yield* entryOf(form, index)
      if (entry.endpoint_id !== "") access.push(entry)
    }
    if (form.has(`access.${MAX_ENTRIES}.endpoint_id`)) {
      return yield* new ConsoleProblem({ status: 400, message: "access: must have at most 256 items" })
    }
    return yield* decodeFields(Permissions, { roles: form.getAll("role"), scopes: lines(form.get("scopes")), access })
  })
