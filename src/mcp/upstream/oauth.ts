import { discoverAuthorizationServerMetadata } from "@modelcontextprotocol/client"
import { Redacted, Schema } from "effect"
import type { BackendConfig } from "../../config/schema.js"
import { bearerTokenSyntax } from "../../http/header-syntax.js"
import type { TokenSource } from "./auth.js"

type OAuthSettings = NonNullable<BackendConfig["oauth"]>

const TokenResponse = Schema.Struct({
  // RFC 6750 b64token characters, so the token can only ever be a well-formed Authorization header.
  access_token: Schema.String.pipe(Schema.pattern(bearerTokenSyntax)),
  token_type: Schema.String,
  expires_in: Schema.optional(Schema.Number.pipe(Schema.positive()))
})

/** Without `expires_in` a token is kept this long; a 401 from the backend drops it earlier. */
const assumedLifetimeMs = 5 * 60_000

/** Refresh when 10% of the lifetime is left, but never hold a token closer than a minute to expiry. */
const refreshMarginMs = (lifetimeMs: number) => Math.min(60_000, lifetimeMs / 10)

/**
 * Client-credentials tokens for one backend (RFC 6749 §4.4, `client_secret_basic`). The token endpoint
 * comes from the issuer's metadata (RFC 8414, OIDC discovery as fallback; the metadata's issuer must
 * echo ours). A token is reused until shortly before it expires; concurrent callers share one fetch.
 */
export const clientCredentials = (oauth: OAuthSettings, now: () => number): TokenSource => {
  let cached: { readonly token: string; readonly refreshAt: number } | undefined
  let inFlight: Promise<string> | undefined

  const fetchToken = async (): Promise<string> => {
    const metadata = await discoverAuthorizationServerMetadata(oauth.issuer)
    if (metadata?.token_endpoint === undefined) throw new Error(`no token endpoint found for ${oauth.issuer}`)
    const basic = Buffer.from(
      `${encodeURIComponent(oauth.client_id)}:${encodeURIComponent(Redacted.value(oauth.client_secret))}`
    ).toString("base64")
    const body = new URLSearchParams({ grant_type: "client_credentials" })
    if (oauth.scopes.length > 0) body.set("scope", oauth.scopes.join(" "))
    const started = now()
    const response = await fetch(metadata.token_endpoint, {
      method: "POST",
      headers: {
        authorization: `Basic ${basic}`,
        "content-type": "application/x-www-form-urlencoded",
        accept: "application/json"
      },
      body,
      signal: AbortSignal.timeout(10_000)
    })
    if (!response.ok) throw new Error(`token endpoint answered ${response.status}`)
    const decoded = Schema.decodeUnknownEither(TokenResponse)(await response.json())
    if (decoded._tag === "Left" || decoded.right.token_type.toLowerCase() !== "bearer") {
      throw new Error("token endpoint returned no usable bearer token")
    }
    const lifetimeMs = (decoded.right.expires_in ?? assumedLifetimeMs / 1000) * 1000
    cached = { token: decoded.right.access_token, refreshAt: started + lifetimeMs - refreshMarginMs(lifetimeMs) }
    return cached.token
  }

  return {
    token: async () => {
      if (cached !== undefined && now() < cached.refreshAt) return cached.token
      inFlight ??= fetchToken().finally(() => {
        inFlight = undefined
      })
      return inFlight
    },
    invalidate: () => {
      cached = undefined
    }
  }
}
