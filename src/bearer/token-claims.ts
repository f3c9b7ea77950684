import type { JWTPayload } from "jose"
import type { Caller } from "./caller.js"

/**
 * The Caller carried by a verified access token. Scopes come from RFC 9068's space-separated `scope`
 * claim, or from an `scp` array (what several external issuers emit); anything else grants no scope.
 */
const scopesOf = (payload: JWTPayload): ReadonlySet<string> => {
  const { scope, scp } = payload
  if (typeof scope === "string") return new Set(scope.split(" ").filter((each) => each !== ""))
  if (Array.isArray(scp)) return new Set(scp.filter((each): each is string => typeof each === "string"))
  return new Set()
}

const text = (value: unknown): string | undefined => (typeof value === "string" && value !== "" ? value : undefined)

export const callerFromClaims = (payload: JWTPayload): Caller => ({
  issuer: payload.iss ?? "",
  subject: payload.sub ?? "",
  scopes: scopesOf(payload),
  clientId: text(payload["client_id"]) ?? text(payload["azp"]),
  sessionId: text(payload["sid"]),
  tokenId: text(payload.jti),
  expiresAt: payload.exp ?? 0
})
