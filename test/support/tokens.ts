import { Effect, Layer } from "effect"
import { type Caller, SessionGuard, SessionRejected } from "../../src/bearer/caller.js"
import type { GatewayConfig } from "../../src/config/schema.js"
import type { Signer } from "../../src/crypto/signer.js"

/**
 * TEST DOUBLE, in one place on purpose: builtin-mode tests that are not about sessions mint access
 * tokens with the Signer and accept their sessions with this guard. The real SessionGuard over stored
 * sessions is tested through the authorization server (test/auth/).
 */
export const revokedSessions = new Set<string>()

const isRevoked = (caller: Caller) => caller.sessionId !== undefined && revokedSessions.has(caller.sessionId)

export const testSessionGuard = Layer.succeed(SessionGuard, {
  check: (caller: Caller) =>
    isRevoked(caller) ? Effect.fail(new SessionRejected({ reason: "session revoked" })) : Effect.void,
  checkNow: (caller: Caller) => !isRevoked(caller)
})

export interface TokenOptions {
  readonly subject?: string
  readonly scopes?: ReadonlyArray<string>
  readonly sessionId?: string
  readonly expiresInSeconds?: number
  readonly audience?: string
  readonly issuer?: string
  /** The OAuth client the token was issued to (`client_id`); default `test-client`. */
  readonly clientId?: string
}

export const mintAccessToken = (signer: Signer, config: GatewayConfig, options: TokenOptions = {}) =>
  Effect.runPromise(
    signer.sign(
      {
        scope: (options.scopes ?? []).join(" "),
        client_id: options.clientId ?? "test-client",
        sid: options.sessionId ?? "test-session"
      },
      {
        issuer: options.issuer ?? config.auth.issuer,
        audience: options.audience ?? config.server.public_url,
        subject: options.subject ?? "user-1",
        expiresInSeconds: options.expiresInSeconds ?? 600
      }
    )
  )
