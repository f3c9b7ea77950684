import { Duration } from "effect"
import type { GatewayConfig } from "../config/schema.js"
import type { AccessSettings } from "./access-state.js"
import { roleScopesOf } from "./roles.js"

/** The namespace of external-mode identities: the issuer whose tokens the gateway verifies. */
export const externalNamespace = (issuer: string) => `external:${issuer}`

/** The access settings of a configuration; all from static fields (`auth`, `admin`). */
export const accessSettingsOf = (config: GatewayConfig): AccessSettings => ({
  roleScopes: roleScopesOf(config),
  membershipMaxAgeMs: Duration.toMillis(config.auth.enterprise_membership_max_age),
  externalNamespace: config.auth.mode === "external" ? externalNamespace(config.auth.issuer) : undefined,
  bootstrapSubjects: new Set(config.auth.sso.bootstrap_subjects)
})
