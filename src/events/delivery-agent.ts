import { Agent } from "node:https"

/** How long a delivery connection may stay unused before the gateway closes it. */
export const DELIVERY_IDLE_MS = 4_000

/**
 * The one HTTPS connection an outbox delivers over (webhooks, docs/approvals.md; the audit archive,
 * docs/audit-archive.md): deliveries go one at a time, so one connection, kept alive between them so a
 * backlog does not pay a TLS handshake each. It is closed after `DELIVERY_IDLE_MS` unused (sooner when
 * the receiver's `Keep-Alive: timeout` says so), before a receiver with Node's default of 5 s closes it
 * under the next delivery. The certificate and host name are always checked, against `ca` when given:
 * explicit, so NODE_TLS_REJECT_UNAUTHORIZED=0 in the environment cannot turn verification off.
 */
export const deliveryAgent = (ca: string | undefined): Agent =>
  new Agent({
    keepAlive: true,
    maxSockets: 1,
    timeout: DELIVERY_IDLE_MS,
    rejectUnauthorized: true,
    ...(ca === undefined ? {} : { ca })
  })

const TLS_CODES = /CERT|SSL|TLS|SELF_SIGNED|UNABLE_TO|HOSTNAME/i

/**
 * The class of a delivery that failed before any answer, as logs and the delivery status show it:
 * `tls` (certificate or handshake refused), `dns`, or `connect` (refused, unreachable, reset).
 */
export const failureClass = (error: NodeJS.ErrnoException): string => {
  const code = error.code ?? ""
  if (TLS_CODES.test(code) || TLS_CODES.test(error.message)) return "tls"
  if (code === "ENOTFOUND" || code === "EAI_AGAIN") return "dns"
  return "connect"
}
