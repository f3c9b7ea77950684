import { isIP } from "node:net"
import { type ConnectionOptions, checkServerIdentity } from "node:tls"
import { Duration, Effect, Redacted } from "effect"
import type { Client } from "ldapts"
import { type LdapSignInFailed, refuse } from "./failure.js"
import { ldapts } from "./ldapts.js"
import type { LdapEndpoint, LdapSettings } from "./settings.js"

/** How long a TCP connection (and, for ldaps://, its TLS handshake) may take. */
export const CONNECT_TIMEOUT_MS = 5_000
/** How long one LDAP operation (StartTLS, bind, search) may take before its connection is dropped. */
export const OPERATION_TIMEOUT_MS = 10_000

/**
 * TLS as the gateway always uses it: the certificate chains to `ca_pem` (or the system's roots) and
 * names the host of the URL. `host` is what the name is checked against — for StartTLS Node would
 * otherwise check `localhost` — and `servername` (SNI) is sent for DNS names only, as RFC 6066 asks.
 * `rejectUnauthorized` is spelled out so that NODE_TLS_REJECT_UNAUTHORIZED=0 cannot switch the check off.
 */
export const tlsOptionsFor = (endpoint: LdapEndpoint, caPem: string | undefined): ConnectionOptions => ({
  host: endpoint.host,
  ...(isIP(endpoint.host) === 0 ? { servername: endpoint.host } : {}),
  ...(caPem === undefined ? {} : { ca: caPem }),
  rejectUnauthorized: true,
  checkServerIdentity,
  minVersion: "TLSv1.2"
})

/** What an error says, for the log: the LDAP result code and the server's message, or the socket's error. */
export const describeError = (error: unknown): string => {
  if (error instanceof ldapts().ResultCodeError) return `${error.name} (result code ${error.code}): ${error.message}`
  if (error instanceof Error) {
    const code = (error as NodeJS.ErrnoException).code
    return code === undefined ? error.message : `${code}: ${error.message}`
  }
  return String(error)
}

/** Errors that mean nothing answered, as opposed to something answering with the wrong certificate. */
const NETWORK_CODES = new Set([
  "ECONNREFUSED",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
  "ETIMEDOUT",
  "EADDRNOTAVAIL"
])

/** A failure to connect: `unreachable`, or `tls_failed` for everything else (TLS is always in play). */
export const connectionFailure = (stage: string, error: unknown): LdapSignInFailed => {
  const code = error instanceof Error ? (error as NodeJS.ErrnoException).code : undefined
  const timedOut = error instanceof Error && /timed out|timeout/i.test(error.message)
  const unreachable = (typeof code === "string" && NETWORK_CODES.has(code)) || timedOut
  return refuse(unreachable ? "unreachable" : "tls_failed", `${stage}: ${describeError(error)}`)
}

/** One ldapts call as an Effect; `failure` decides what its rejection means. */
export const request = <A>(run: () => Promise<A>, failure: (error: unknown) => LdapSignInFailed) =>
  Effect.tryPromise({ try: run, catch: failure })

/**
 * A connection to the directory, encrypted before anything else is sent, closed when the scope ends.
 * `ldaps://` gets its TLS options in the constructor (and connects on the first operation). `ldap://`
 * must not: ldapts would then speak TLS from the first byte; it connects in cleartext and runs StartTLS
 * at once, and when that fails the sign-in fails with it — there is no cleartext fallback.
 */
export const openConnection = (settings: LdapSettings, endpoint: LdapEndpoint) =>
  Effect.acquireRelease(
    Effect.sync(
      () =>
        new (ldapts().Client)({
          url: `${endpoint.scheme}://${endpoint.host}:${endpoint.port}`,
          connectTimeout: CONNECT_TIMEOUT_MS,
          timeout: OPERATION_TIMEOUT_MS,
          ...(endpoint.scheme === "ldaps" ? { tlsOptions: tlsOptionsFor(endpoint, settings.ca_pem) } : {})
        })
    ),
    // Not awaited: the unbind is a courtesy, and a directory that stopped answering must not hold the sign-in.
    (client) =>
      Effect.sync(() => {
        client.unbind().catch(() => undefined)
      })
  ).pipe(
    Effect.tap((client) =>
      endpoint.scheme === "ldaps"
        ? Effect.void
        : request(
            () => client.startTLS(tlsOptionsFor(endpoint, settings.ca_pem)),
            (error) => connectionFailure("StartTLS", error)
          ).pipe(
            // ldapts times the StartTLS request but not the handshake that follows it.
            Effect.timeoutFail({
              duration: Duration.millis(OPERATION_TIMEOUT_MS),
              onTimeout: () => refuse("unreachable", `StartTLS: no TLS handshake within ${OPERATION_TIMEOUT_MS} ms`)
            })
          )
    )
  )

/** The service account's bind (`bind_dn`, `bind_password`): refused is `service_bind_failed`. */
export const bindService = (client: Client, settings: LdapSettings) =>
  request(
    () => client.bind(settings.bind_dn, Redacted.value(settings.bind_password)),
    (error) =>
      error instanceof ldapts().ResultCodeError
        ? refuse("service_bind_failed", `service bind: ${describeError(error)}`)
        : connectionFailure("service bind", error)
  )
