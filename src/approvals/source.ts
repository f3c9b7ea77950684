import type { BackendConfig } from "../config/schema.js"
import { sha256Hex } from "../crypto/hashing.js"
import type { PolicyTool } from "../policy/tool.js"
import type { HttpEndpoint, HttpToolSpec, ToolGroup } from "../sources/schema.js"
import { canonicalJson } from "./intent.js"

/** Where the tool an approval is given for runs, and the tool group it is reached through, if any. */
export type ApprovalSource =
  | { readonly kind: "backend"; readonly backend: BackendConfig }
  | { readonly kind: "http"; readonly endpoint: HttpEndpoint; readonly spec: HttpToolSpec }
  | {
      readonly kind: "tool_group"
      readonly group: ToolGroup
      /** The member's own source, and its original tool name there. */
      readonly member: Exclude<ApprovalSource, { readonly kind: "tool_group" }>
      readonly memberTool: string
    }

/** Who an endpoint authenticates as, never a secret's value. */
const credentialsOf = (credentials: BackendConfig["credentials"]) =>
  credentials === undefined
    ? null
    : credentials.type === "basic"
      ? { type: "basic", username: credentials.username }
      : { type: credentials.type }

/** The endpoint's part of the hashed material (a backend's is unchanged since approvals began: stored hashes hold). */
const endpointMaterial = (source: ApprovalSource): Record<string, unknown> => {
  switch (source.kind) {
    case "backend": {
      const { backend } = source
      return {
        backend: backend.id,
        url: backend.url,
        allow_insecure_http: backend.allow_insecure_http,
        naming: backend.naming,
        headers: Object.keys(backend.headers).sort(),
        credentials: credentialsOf(backend.credentials),
        oauth:
          backend.oauth === undefined
            ? null
            : { issuer: backend.oauth.issuer, client_id: backend.oauth.client_id, scopes: backend.oauth.scopes },
        required_scopes: backend.required_scopes
      }
    }
    case "http": {
      const { endpoint, spec } = source
      return {
        kind: endpoint.kind,
        backend: endpoint.id,
        method: spec.method,
        url: spec.url,
        body: spec.body ?? null,
        argument_headers: spec.argument_headers,
        allow_insecure_http: endpoint.allow_insecure_http,
        naming: endpoint.naming,
        headers: Object.keys(endpoint.headers).sort(),
        credentials: credentialsOf(endpoint.credentials),
        required_scopes: endpoint.required_scopes
      }
    }
    case "tool_group": {
      const { group } = source
      return {
        kind: "tool_group",
        backend: group.id,
        members: group.members,
        naming: group.naming,
        required_scopes: group.required_scopes,
        member: { ...endpointMaterial(source.member), tool: source.memberTool }
      }
    }
  }
}

/**
 * The configuration an approval was given under: the endpoint the policy decided on — a backend (its
 * id, URL, transport and naming, the names of its fixed headers, who it authenticates as: credential
 * type and user name, OAuth issuer, client and scopes; never a secret's value; its required scopes), an
 * HTTP endpoint (kind, id, the tool's method, URL template, body and argument headers, the names of its
 * fixed headers, who it authenticates as, its required scopes), or a tool group (id, members, naming,
 * required scopes, and the member's endpoint as above) — and the tool with its rule (write flag and
 * approval policy). Timeouts and `required` are left out. While it is unchanged — across restarts and
 * reloads — the status tool shows cached results and may ask the status tool; once it changes, both are
 * withheld and a resume is refused (docs/approvals.md, "Configuration changes").
 */
export const sourceHashOf = (source: ApprovalSource, tool: Pick<PolicyTool, "original" | "write" | "approval">) =>
  sha256Hex(
    canonicalJson({
      ...endpointMaterial(source),
      tool: tool.original,
      write: tool.write,
      approval: tool.approval ?? null
    })
  )
