import { createHmac } from "node:crypto"

/**
 * The webhook signature (docs/approvals.md, "Verifying a delivery"): HMAC-SHA256 keyed with the UTF-8
 * bytes of the secret over `<timestamp>.<raw body>`, sent as `X-Gateway-Signature: sha256=<hex>` with
 * the timestamp (Unix seconds) in `X-Gateway-Timestamp`. The timestamp is signed, so a receiver that
 * refuses stale ones refuses replays.
 */
export const webhookSignature = (secret: string, timestamp: string, body: string): string =>
  `sha256=${createHmac("sha256", Buffer.from(secret, "utf8")).update(`${timestamp}.${body}`, "utf8").digest("hex")}`
