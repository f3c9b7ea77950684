import { HttpRouter, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { Signer } from "../crypto/signer.js"

/** The gateway's public signing keys (docs/signing-keys.md). Cached briefly: keys rotate rarely. */
export const jwksPath = "/sso/jwks.json"

export const jwks = HttpRouter.get(
  jwksPath,
  Effect.map(Signer, (signer) =>
    HttpServerResponse.unsafeJson(signer.jwks, {
      headers: { "cache-control": "public, max-age=300", "content-type": "application/jwk-set+json" }
    })
  )
)
