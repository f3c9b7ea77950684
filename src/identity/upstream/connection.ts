import { createHash } from "node:crypto"
import type { Redacted } from "effect"
import type { Upstream } from "../../config/schema.js"

/** `auth.sso.upstream` with its secret resolved: the enterprise identity provider the gateway signs people in with. */
export interface UpstreamConnection {
  readonly protocol: "oidc" | "oauth2"
  readonly issuer: string
  readonly clientId: string
  readonly clientSecret: Redacted.Redacted<string>
  readonly tokenAuthMethod: "client_secret_post" | "client_secret_basic"
  readonly scopes: ReadonlyArray<string>
  readonly nameClaim: string | undefined
  readonly tenant: { readonly claim: string; readonly value: string } | undefined
  readonly groupsClaim: string | undefined
  readonly departmentsClaim: string | undefined
  /** `oauth2` only: explicit endpoints (no discovery) and where the UserInfo answer holds the subject. */
  readonly endpoints: { readonly authorization: string; readonly token: string; readonly userinfo: string } | undefined
  readonly subjectClaim: string | undefined
  readonly success: { readonly claim: string; readonly value: string } | undefined
  /** PEM trust anchors for the upstream's endpoints (`ca_file`); undefined: the system roots. */
  readonly ca: string | undefined
  /** The identity namespace its users live in (`namespaceOf`). */
  readonly namespace: string
}

/**
 * The identity namespace of a connection (docs/enterprise-sign-in.md, "Identities"): a hash of what
 * decides who a subject is — protocol, issuer, client id, where the subject is read and the tenant
 * boundary. Users are keyed by namespace and subject, so changing any of these starts a namespace
 * whose users inherit nothing from the old one. Display-name, group and department claims are not part
 * of it: they describe a person, not who the person is.
 */
export const namespaceOf = (
  upstream: Pick<
    typeof Upstream.Type,
    "protocol" | "issuer" | "client_id" | "subject_claim" | "tenant_claim" | "tenant_value"
  >
): string =>
  `${upstream.protocol}:${createHash("sha256")
    .update(
      JSON.stringify([
        upstream.protocol,
        upstream.issuer,
        upstream.client_id,
        upstream.subject_claim ?? "sub",
        upstream.tenant_claim ?? null,
        upstream.tenant_value ?? null
      ])
    )
    .digest("hex")
    .slice(0, 32)}`

export const connectionOf = (
  upstream: typeof Upstream.Type,
  clientSecret: Redacted.Redacted<string>,
  ca: string | undefined
): UpstreamConnection => ({
  protocol: upstream.protocol,
  issuer: upstream.issuer,
  clientId: upstream.client_id,
  clientSecret,
  tokenAuthMethod: upstream.token_auth_method,
  scopes: upstream.scopes,
  nameClaim: upstream.name_claim,
  tenant:
    upstream.tenant_claim === undefined || upstream.tenant_value === undefined
      ? undefined
      : { claim: upstream.tenant_claim, value: upstream.tenant_value },
  groupsClaim: upstream.groups_claim,
  departmentsClaim: upstream.departments_claim,
  endpoints:
    upstream.authorization_url === undefined || upstream.token_url === undefined || upstream.userinfo_url === undefined
      ? undefined
      : { authorization: upstream.authorization_url, token: upstream.token_url, userinfo: upstream.userinfo_url },
  subjectClaim: upstream.subject_claim,
  success:
    upstream.success_claim === undefined || upstream.success_value === undefined
      ? undefined
      : { claim: upstream.success_claim, value: upstream.success_value },
  ca,
  namespace: namespaceOf(upstream)
})
