/** Header names the endpoint's fixed headers cannot set: framing and routing are the gateway's. */
export const framingHeaders = new Set([
  "host",
  "content-length",
  "transfer-encoding",
  "connection",
  "keep-alive",
  "upgrade",
  "te",
  "trailer",
  "expect",
  "proxy-connection"
])

/** Header names an argument never sets: framing, routing and the credentials' own. */
export const reservedHeaders = new Set([
  ...framingHeaders,
  "authorization",
  "proxy-authorization",
  "cookie",
  "content-type"
])
