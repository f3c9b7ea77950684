import { isRecord } from "../../json.js"
import { hasControlCharacter } from "../../text.js"
import type { UpstreamConnection } from "./connection.js"

/** Why an identity asserted by the upstream is refused (docs/enterprise-sign-in.md, "Refusals"). */
export type ClaimsProblem =
  | "subject_missing"
  | "tenant_mismatch"
  | "groups_claim_invalid"
  | "departments_claim_invalid"
  | "name_claim_invalid"
  | "success_claim_mismatch"

/** Who the upstream says signed in, from verified claims only. */
export interface UpstreamIdentity {
  readonly subject: string
  readonly name: string | undefined
  readonly groups: ReadonlyArray<string>
  readonly departments: ReadonlyArray<string>
  /** OIDC only, verified ID-token claims: the assurance and time of the upstream authentication. */
  readonly acr: string | undefined
  readonly authTime: number | undefined
}

/** Memberships named per sign-in, like the per-user limit of directory snapshots. */
export const MAX_CLAIMED_GROUPS = 256
const MAX_CLAIM_TEXT = 256

/**
 * Reads a claim by a dot-separated path (`data.user.id`) for OAuth2 UserInfo answers; OIDC claim names
 * are taken whole (`dots: false`), since a claim name may itself contain dots.
 */
export const claimAt = (claims: unknown, path: string, dots: boolean): unknown => {
  if (!dots) return isRecord(claims) && Object.hasOwn(claims, path) ? claims[path] : undefined
  let current: unknown = claims
  for (const key of path.split(".")) {
    if (!isRecord(current) || !Object.hasOwn(current, key)) return undefined
    current = current[key]
  }
  return current
}

/** A list claim: absent is empty; anything but an array of nonempty strings refuses the sign-in. */
const stringList = (value: unknown): ReadonlyArray<string> | undefined => {
  if (value === undefined) return []
  if (!Array.isArray(value) || value.length > MAX_CLAIMED_GROUPS) return undefined
  const items = value.filter(
    (item): item is string =>
      typeof item === "string" && item.length > 0 && item.length <= MAX_CLAIM_TEXT && !hasControlCharacter(item)
  )
  return items.length === value.length ? [...new Set(items)] : undefined
}

/**
 * Builds the identity from the claims of a verified ID token (OIDC) or a UserInfo answer (OAuth2), or
 * names the first problem. `subject` is the OIDC `sub` the token signature covers, or for OAuth2 the
 * value at `subject_claim` (a nonempty string; an integer id counts as its decimal text).
 */
export const identityFrom = (
  connection: UpstreamConnection,
  claims: Record<string, unknown>,
  oidc: boolean
): UpstreamIdentity | ClaimsProblem => {
  const dots = !oidc
  if (
    connection.success !== undefined &&
    claimAt(claims, connection.success.claim, dots) !== connection.success.value
  ) {
    return "success_claim_mismatch"
  }
  const rawSubject = claimAt(claims, oidc ? "sub" : (connection.subjectClaim ?? "sub"), dots)
  const subject =
    typeof rawSubject === "string" ? rawSubject : Number.isSafeInteger(rawSubject) ? String(rawSubject) : undefined
  // A control character is no part of a usable subject, name or group (and U+0000 cannot be stored).
  if (
    subject === undefined ||
    subject.trim() === "" ||
    subject.length > MAX_CLAIM_TEXT ||
    hasControlCharacter(subject)
  ) {
    return "subject_missing"
  }
  if (connection.tenant !== undefined && claimAt(claims, connection.tenant.claim, dots) !== connection.tenant.value) {
    return "tenant_mismatch"
  }
  const rawName = connection.nameClaim === undefined ? undefined : claimAt(claims, connection.nameClaim, dots)
  if (rawName !== undefined && (typeof rawName !== "string" || hasControlCharacter(rawName))) {
    return "name_claim_invalid"
  }
  const groups = connection.groupsClaim === undefined ? [] : stringList(claimAt(claims, connection.groupsClaim, dots))
  if (groups === undefined) return "groups_claim_invalid"
  const departments =
    connection.departmentsClaim === undefined ? [] : stringList(claimAt(claims, connection.departmentsClaim, dots))
  if (departments === undefined) return "departments_claim_invalid"
  const acr = oidc && typeof claims["acr"] === "string" ? claims["acr"] : undefined
  const authTime = oidc && Number.isSafeInteger(claims["auth_time"]) ? (claims["auth_time"] as number) : undefined
  return {
    subject,
    name: rawName === undefined || rawName.trim() === "" ? undefined : rawName.slice(0, MAX_CLAIM_TEXT),
    groups,
    departments,
    acr,
    authTime
  }
}
