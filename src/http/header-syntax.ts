/** An HTTP header name (RFC 9110 token), at most 128 characters. */
export const headerName = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,128}$/

/** A header value the gateway sends: printable ASCII and tabs (no CR, LF, NUL or other control). */
export const headerValue = /^[\t\x20-\x7E]*$/

/** A bearer token as RFC 6750 §2.1 spells one (b64token), so `Bearer <token>` is always one well-formed header. */
export const bearerTokenSyntax = /^[A-Za-z0-9\-._~+/]+=*$/
