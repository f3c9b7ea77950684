import { Effect } from "effect"
import * as jose from "jose"
import { type Caller, SessionGuard } from "../../src/auth/caller.js"
import { Signer } from "../../src/crypto/signer.js"
import { inGateway, type OAuthGateway } from "./oauth-gateway.js"

/** The Caller /mcp would build from a gateway access token (claims: docs/authorization-server.md). */
export const callerOf = (token: string): Caller => {
  const claims = jose.decodeJwt(token)
  return {
    issuer: claims.iss ?? "",
    subject: claims.sub ?? "",
    scopes: new Set(
      String(claims["scope"] ?? "")
        .split(" ")
        .filter((scope) => scope !== "")
    ),
    clientId: typeof claims["client_id"] === "string" ? claims["client_id"] : undefined,
    sessionId: typeof claims["sid"] === "string" ? claims["sid"] : undefined,
    tokenId: claims.jti,
    expiresAt: claims.exp ?? 0
  }
}

/** What /mcp does with a bearer token in builtin mode: verify the JWT, then the live session. */
export const admits = (gateway: OAuthGateway, token: string) =>
  inGateway(gateway)(
    Effect.gen(function* () {
      yield* (yield* Signer).verify(token, { issuer: gateway.issuer, audience: gateway.mcpUrl })
      yield* (yield* SessionGuard).check(callerOf(token))
    })
  ).pipe(
    Effect.match({
      onFailure: (error) => (error._tag === "TokenInvalid" ? `token: ${error.code}` : `session: ${error.reason}`),
      onSuccess: () => "admitted"
    })
  )
