import { HttpError } from "../http/error-body.js"

/**
 * The RFC 6750 challenges of /mcp (docs/mcp.md, "Tokens"; docs/errors.md). Every challenge
 * names the path-aware metadata document, so a client can find the authorization server from any of them.
 */

const quoted = (value: string) => `"${value.replace(/["\\]/g, "\\$&")}"`

export const missingToken = (resourceMetadata: string) =>
  new HttpError({
    status: 401,
    code: "unauthorized",
    description: "A bearer token is required in the Authorization header.",
    headers: { "www-authenticate": `Bearer resource_metadata=${quoted(resourceMetadata)}` }
  })

export const invalidToken = (resourceMetadata: string, description: string) =>
  new HttpError({
    status: 401,
    code: "invalid_token",
    description,
    headers: {
      "www-authenticate": `Bearer error="invalid_token", error_description=${quoted(description)}, resource_metadata=${quoted(resourceMetadata)}`
    }
  })

export const insufficientScope = (resourceMetadata: string, scopes: ReadonlyArray<string>) =>
  new HttpError({
    status: 403,
    code: "insufficient_scope",
    description: `The token lacks the scopes needed for any tool on this gateway: ${scopes.join(" ")}.`,
    headers: {
      "www-authenticate": `Bearer error="insufficient_scope", scope=${quoted(scopes.join(" "))}, resource_metadata=${quoted(resourceMetadata)}`
    }
  })
