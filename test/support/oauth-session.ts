import { randomBytes } from "node:crypto"
import { Clock, Effect } from "effect"
import * as jose from "jose"
import { type Caller, SessionGuard } from "../../src/bearer/caller.js"
import { Signer } from "../../src/crypto/signer.js"
import { SessionRepo } from "../../src/store/sessions.js"
import { UserRepo } from "../../src/store/users.js"
import { postToolsList } from "./mcp-clients.js"
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

/** `tools/list` on the gateway's /mcp over real HTTP with `token` (2025-era, no envelope). */
export const listTools = (mcpUrl: string, token: string) => Effect.promise(() => postToolsList(mcpUrl, token))

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

/**
 * A real stored session and a token for it, as a finished sign-in would leave them, for tests of /mcp
 * that need an authenticated caller without driving the sign-in pages. Needs the gateway's base services.
 */
export const mintSessionToken = (options: {
  readonly issuer: string
  readonly audience: string
  readonly scopes?: ReadonlyArray<string>
  readonly clientId?: string
  readonly expiresInSeconds?: number
}) =>
  Effect.gen(function* () {
    const now = yield* Clock.currentTimeMillis
    const userId = yield* (yield* UserRepo).insertLocal({
      kind: "local",
      username: `user-${randomBytes(6).toString("hex")}`,
      displayName: "Test user",
      at: new Date(now)
    })
    const sessionId = randomBytes(16).toString("base64url")
    const clientId = options.clientId ?? "cli"
    yield* (yield* SessionRepo).insert({
      id: sessionId,
      userId,
      clientId,
      scope: (options.scopes ?? []).join(" "),
      resource: options.audience,
      authTime: new Date(now),
      createdAt: new Date(now),
      expiresAt: new Date(now + 8 * 3600_000)
    })
    const token = yield* (yield* Signer).sign(
      { scope: (options.scopes ?? []).join(" "), client_id: clientId, sid: sessionId },
      {
        issuer: options.issuer,
        audience: options.audience,
        subject: userId,
        expiresInSeconds: options.expiresInSeconds ?? 600
      }
    )
    return { token, userId, sessionId }
  })
