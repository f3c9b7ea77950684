import type { GatewayConfig } from "../../config/schema.js"
import { namespaceOf } from "./connection.js"

/**
 * Whether a first sign-in of `subject` in `namespace` is a bootstrap administrator
 * (`auth.sso.bootstrap_subjects`; docs/enterprise-sign-in.md, "Identities"): only for the identity
 * provider of the configuration file (`auth.sso.upstream`) — a subject string means nothing in another
 * connection's namespace, which an administrator could create through the Management API — and only
 * at sign-in, never through a directory snapshot.
 */
export const isBootstrapSubject = (config: GatewayConfig, namespace: string, subject: string): boolean => {
  const upstream = config.auth.sso.upstream
  return (
    upstream !== undefined &&
    config.auth.sso.bootstrap_subjects.includes(subject) &&
    namespace === namespaceOf(upstream)
  )
}
