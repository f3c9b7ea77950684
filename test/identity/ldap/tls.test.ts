/**
 * The directory connection is always TLS and always verified (docs/ldap.md, "Connection"): an untrusted
 * certificate, a certificate for another name, or a server that cannot do StartTLS end the sign-in as
 * `tls_failed` — never in a cleartext bind.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { Client } from "ldapts"
import { authenticate } from "../../../src/identity/ldap/authenticate.js"
import type { LdapSettings } from "../../../src/identity/ldap/settings.js"
import {
  directorySettings,
  type LdapCertificates,
  makeLdapCertificates,
  SERVICE_DN,
  SERVICE_PASSWORD,
  type Slapd,
  startSlapd,
  USERS
} from "../../support/slapd.js"

let certificates: LdapCertificates
/** Certificate for 127.0.0.1 and localhost. */
let verified: Slapd
/** Certificate for localhost only, connected to as 127.0.0.1. */
let localhostOnly: Slapd
/** No TLS at all. */
let plain: Slapd

beforeAll(async () => {
  certificates = makeLdapCertificates()
  ;[verified, localhostOnly, plain] = await Promise.all([
    startSlapd(certificates, "verified"),
    startSlapd(certificates, "localhost-only"),
    startSlapd(certificates, "none")
  ])
})

afterAll(async () => {
  await Promise.all([verified?.stop(), localhostOnly?.stop(), plain?.stop()])
  certificates?.remove()
})

const refusal = (settings: LdapSettings) =>
  Effect.flip(authenticate(settings, "alice", Redacted.make(USERS.alice.password)))

describe("LDAP connection security", () => {
  it.live(
    "a certificate from another CA is refused, over ldaps:// and StartTLS, and so is one the system does not trust",
    () =>
      Effect.gen(function* () {
        for (const url of [verified.ldapsUrl!, verified.ldapUrl]) {
          const other = yield* refusal(directorySettings(url, certificates.otherCaPem))
          expect(other.reason).toBe("tls_failed")
          expect(other.detail).toMatch(/certificate/i)
          const system = yield* refusal(directorySettings(url, undefined))
          expect(system.reason).toBe("tls_failed")
        }
        // The same server with the right CA: the refusals were about trust.
        const identity = yield* authenticate(
          directorySettings(verified.ldapsUrl!, certificates.caPem),
          "alice",
          Redacted.make(USERS.alice.password)
        )
        expect(identity.name).toBe("Alice Liddell")
      })
  )

  it.live("a certificate for another name is refused, over ldaps:// and StartTLS", () =>
    Effect.gen(function* () {
      for (const url of [localhostOnly.ldapsUrl!, localhostOnly.ldapUrl]) {
        const failure = yield* refusal(directorySettings(url, certificates.caPem))
        expect(failure.reason).toBe("tls_failed")
        expect(failure.detail).toContain("ERR_TLS_CERT_ALTNAME_INVALID")
      }
    })
  )

  it.live("left to itself, ldapts' StartTLS checks the name `localhost`, which this certificate names", () =>
    Effect.gen(function* () {
      // Why the gateway always passes the URL's host: without it this connection to 127.0.0.1 passes.
      const client = new Client({ url: localhostOnly.ldapUrl })
      const outcome = yield* Effect.promise(() =>
        client.startTLS({ ca: certificates.caPem }).then(
          () => "accepted",
          (error: Error) => error.message
        )
      )
      yield* Effect.promise(() => client.unbind())
      expect(outcome).toBe("accepted")
    })
  )

  it.live("a server without StartTLS is refused, though it would take a cleartext bind", () =>
    Effect.gen(function* () {
      const cleartext = new Client({ url: plain.ldapUrl })
      yield* Effect.promise(() => cleartext.bind(SERVICE_DN, SERVICE_PASSWORD))
      yield* Effect.promise(() => cleartext.unbind())

      const failure = yield* refusal(directorySettings(plain.ldapUrl, certificates.caPem))
      expect(failure.reason).toBe("tls_failed")
      expect(failure.detail).toMatch(/^StartTLS: /)
    })
  )

  it.live("ldaps:// to a cleartext listener fails the handshake", () =>
    Effect.gen(function* () {
      const failure = yield* refusal(
        directorySettings(plain.ldapUrl.replace("ldap://", "ldaps://"), certificates.caPem)
      )
      expect(failure.reason).toBe("tls_failed")
    })
  )
})
