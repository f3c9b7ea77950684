import { Clock, Context, Duration, Effect, Layer, Option } from "effect"
import * as jose from "jose"
import { Config } from "../config/service.js"
import { Signer } from "../crypto/signer.js"
import { HttpError } from "../http/error-body.js"
import { bearerTokenSyntax } from "../http/header-syntax.js"
import { type Caller, devSessionPrefix, SessionGuard } from "./caller.js"
import { invalidToken, missingToken } from "./challenges.js"
import { makeExternalKeys, VerifierNotReady } from "./external-jwks.js"
import { metadataUrl } from "./resource-metadata.js"
import { callerFromClaims } from "./token-claims.js"
import { VerifiedTokens } from "./verified-tokens.js"

/**
 * Verifies the bearer token of an /mcp request (docs/mcp.md, "Tokens"). Issuer, audience
 * (= `server.public_url`), expiry and the algorithm allow-list are always checked. In `builtin` mode the
 * token must also belong to a live stored session (SessionGuard); without a SessionGuard in the context
 * every builtin token is refused, so a build without the session store denies instead of trusting JWTs alone.
 */
export class BearerVerifier extends Context.Tag("gateway/BearerVerifier")<
  BearerVerifier,
  {
    /** Verifies a token for /mcp (audience `server.public_url`). */
    readonly verify: (authorization: string | undefined) => Effect.Effect<Caller, HttpError>
    /**
     * `verify` answered from memory alone, at `nowMillis`: the Caller when the token is one already
     * verified and unexpired and the SessionGuard admits it from its cache; undefined means "ask
     * `verify`" (which also gives every refusal), never "refused".
     */
    readonly verifyNow: (authorization: string | undefined, nowMillis: number) => Caller | undefined
    /**
     * A verifier for another resource of this gateway (the Management API): the same checks with
     * `audience`, challenges naming `resourceMetadata`, and its own cache of verified tokens.
     */
    readonly forResource: (
      audience: string,
      resourceMetadata: string
    ) => (authorization: string | undefined) => Effect.Effect<Caller, HttpError>
    readonly ready: Effect.Effect<boolean>
  }
>() {}

/** RFC 6750 §2.1: `Bearer <token>`, scheme case-insensitive, the token as `bearerTokenSyntax` spells one. */
const bearerHeader = new RegExp(`^Bearer +(${bearerTokenSyntax.source.slice(1, -1)}) *$`, "i")

/** The token of an `Authorization` header; the only accepted bearer method. */
export const bearerToken = (authorization: string | undefined): string | undefined =>
  bearerHeader.exec(authorization ?? "")?.[1]

/**
 * Every token the gateway takes is a JWS in compact form (RFC 7515 §7.1): three base64url parts, no
 * padding, nothing else, each part canonical (`canonical`). A token spelled otherwise is refused before any key is tried, so one token is
 * never accepted in several spellings (`==` added to its signature decodes to the same bytes).
 */
const compactJws = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/

/**
 * Each part is the one base64url spelling of its bytes: a part's last character carries spare bits
 * (two or four) that decoding ignores, so `…Cw` and `…Cx` would be one signature in 15 more spellings.
 * Checked once per token (the verified-token cache keeps it after).
 */
const canonical = (token: string): boolean =>
  compactJws.test(token) &&
  token.split(".").every((part) => Buffer.from(part, "base64url").toString("base64url") === part)

// External issuers run on other clocks; a few seconds of skew must not reject fresh tokens.
const externalClockTolerance = Duration.seconds(5)

export const BearerVerifierLive = Layer.scoped(
  BearerVerifier,
  Effect.gen(function* () {
    const { config } = yield* Config
    const signer = yield* Signer
    const issuer = config.auth.issuer
    // Looked up once per generation, not per request: the SessionGuard is a process-wide service.
    const guard = yield* Effect.serviceOption(SessionGuard)
    const external = config.auth.mode === "external" ? config.auth.external : undefined
    const keys = external === undefined ? undefined : yield* makeExternalKeys(external)

    const make = (audience: string, challengeUrl: string) => {
      const rejected = (description: string) => invalidToken(challengeUrl, description)
      const noSessionStore = rejected("No session store is available to check this token.")
      const sessionEnded = rejected("The token's session is no longer valid.")
      // A gateway with --dev accepts these before the stored sessions are asked; here one was refused.
      const devOnly = rejected(
        "Development tokens (gateway dev-token) are accepted only by a gateway started with --dev."
      )
      const verified = new VerifiedTokens(10_000)
      // Built from plain combinators rather than Effect.gen: this runs on every /mcp request, and a
      // generator per request costs more than the cached lookup it wraps.
      const checkSession = (caller: Caller): Effect.Effect<Caller, HttpError> => {
        if (Option.isNone(guard)) return Effect.fail(noSessionStore)
        const isDev = caller.sessionId?.startsWith(devSessionPrefix) === true
        return guard.value.check(caller).pipe(
          Effect.mapError(() => (isDev ? devOnly : sessionEnded)),
          Effect.as(caller)
        )
      }
      const verifySignature = (token: string) =>
        signer.verify(token, { issuer, audience }).pipe(
          Effect.mapError((error) => rejected(describe(error.code))),
          Effect.map((payload) => {
            const caller = callerFromClaims(payload)
            verified.set(token, caller)
            return caller
          })
        )
      const builtin = (token: string) =>
        Effect.flatMap(Clock.currentTimeMillis, (millis) => {
          const cached = verified.get(token, Math.floor(millis / 1000))
          return cached === undefined ? Effect.flatMap(verifySignature(token), checkSession) : checkSession(cached)
        })

      const withBearer =
        (verifyToken: (token: string) => Effect.Effect<Caller, HttpError>) => (authorization: string | undefined) => {
          if (authorization === undefined || authorization === "") return Effect.fail(missingToken(challengeUrl))
          const token = bearerToken(authorization)
          if (token === undefined) return Effect.fail(rejected("The Authorization header is not a bearer token."))
          if (!canonical(token)) {
            return Effect.fail(rejected("The token is not a JSON Web Token (three base64url parts, no padding)."))
          }
          return verifyToken(token)
        }

      // Builtin tokens only: external ones are checked by jose on every request and have no cache here.
      const builtinNow = (authorization: string | undefined, now: number): Caller | undefined => {
        if (Option.isNone(guard)) return undefined
        const token = bearerToken(authorization)
        const cached = token === undefined ? undefined : verified.get(token, Math.floor(now / 1000))
        return cached !== undefined && guard.value.checkNow(cached, now) ? cached : undefined
      }

      if (external === undefined || keys === undefined) return { verify: withBearer(builtin), verifyNow: builtinNow }
      const options = {
        issuer,
        audience,
        algorithms: [...external.algorithms],
        requiredClaims: ["exp", "sub"],
        clockTolerance: Duration.toSeconds(externalClockTolerance)
      }
      // No SessionGuard: an external issuer's tokens have no stored session here.
      const verifyExternal = (token: string) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          Effect.tryPromise({
            try: () => jose.jwtVerify(token, keys.getKey, { ...options, currentDate: new Date(now) }),
            catch: (error) =>
              error instanceof VerifierNotReady
                ? verifierUnavailable
                : rejected(describe(error instanceof jose.errors.JOSEError ? error.code : "ERR"))
          })
        ).pipe(Effect.map(({ payload }) => callerFromClaims(payload)))
      return { verify: withBearer(verifyExternal), verifyNow: () => undefined }
    }

    const resources = new Map<string, (authorization: string | undefined) => Effect.Effect<Caller, HttpError>>()
    const mcp = make(config.server.public_url, metadataUrl(config.server.public_url))
    return {
      verify: mcp.verify,
      verifyNow: mcp.verifyNow,
      forResource: (audience, resourceMetadata) => {
        let verifier = resources.get(audience)
        if (verifier === undefined) {
          verifier = make(audience, resourceMetadata).verify
          resources.set(audience, verifier)
        }
        return verifier
      },
      ready: keys === undefined ? signer.ready : keys.loaded
    }
  })
)

/**
 * External mode before the issuer's key set could be loaded: the token may be fine, so it is not
 * refused as invalid (the client would throw it away); the client should retry shortly.
 */
const verifierUnavailable = new HttpError({
  status: 503,
  code: "verifier_unavailable",
  description: "The token issuer's signing keys are not loaded yet; try again shortly.",
  headers: { "retry-after": "5" }
})

// Safe, fixed texts: jose's messages can quote claim values, which are attacker-chosen.
const describe = (code: string): string => {
  switch (code) {
    case "ERR_JWT_EXPIRED":
      return "The token has expired."
    case "ERR_JWT_CLAIM_VALIDATION_FAILED":
      return "The token's issuer, audience or claims are not accepted here."
    case "ERR_JOSE_ALG_NOT_ALLOWED":
      return "The token's signing algorithm is not accepted."
    case "ERR_JWKS_NO_MATCHING_KEY":
      return "The token's signing key is not known."
    default:
      return "The token could not be verified."
  }
}
