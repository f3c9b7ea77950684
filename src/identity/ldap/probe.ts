import { Duration, Effect } from "effect"
import { SIGN_IN_TIMEOUT_MS, settingsProblem } from "./authenticate.js"
import { bindService, openConnection } from "./connection.js"
import { refuse } from "./failure.js"
import { type LdapSettings, parseLdapUrl } from "./settings.js"

/**
 * Whether the directory can be used at all, without anyone's password (the Management API's probe,
 * docs/ldap.md, "Enabling it"): the settings are checked, a connection is opened exactly as a sign-in
 * opens one (TLS from the first byte or StartTLS, the certificate and host name verified) and the
 * service account binds. Nothing is searched; the connection is closed at once. Fails with the sign-in's
 * refusals: `invalid_settings`, `unreachable`, `tls_failed`, `service_bind_failed`.
 */
export const probeDirectory = Effect.fn("LdapDirectory.probe")(function* (settings: LdapSettings) {
  const refused = settingsProblem(settings)
  if (refused !== undefined) return yield* refused
  const endpoint = parseLdapUrl(settings.url)
  if (typeof endpoint === "string") return yield* refuse("invalid_settings", `url: ${endpoint}`)
  yield* Effect.scoped(
    Effect.flatMap(openConnection(settings, endpoint), (client) => bindService(client, settings))
  ).pipe(
    Effect.timeoutFail({
      duration: Duration.millis(SIGN_IN_TIMEOUT_MS),
      onTimeout: () => refuse("unreachable", `the probe took longer than ${SIGN_IN_TIMEOUT_MS} ms`)
    })
  )
})
