/**
 * LDAP sign-in against a real OpenLDAP server (docs/ldap.md, "How a sign-in goes"): the subject is the
 * entry's stable id, groups come from the group search, and every way a sign-in can go wrong ends in
 * its own refusal — before any network for input that must never be sent.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { Client } from "ldapts"
import { authenticate } from "../../../src/identity/ldap/authenticate.js"
import type { LdapFailureReason } from "../../../src/identity/ldap/failure.js"
import { escapeFilterValue, groupFilter, userFilter } from "../../../src/identity/ldap/filter.js"
import type { LdapSettings } from "../../../src/identity/ldap/settings.js"
import {
  BASE_DN,
  BINARY_ID,
  directorySettings,
  GROUPS_DN,
  type LdapCertificates,
  makeLdapCertificates,
  PEOPLE_DN,
  POSIX_GROUPS_DN,
  type Slapd,
  startSlapd,
  USERS,
  withoutGroups
} from "../../support/slapd.js"

let certificates: LdapCertificates
let slapd: Slapd
/** entryUUIDs as slapadd made them: people by uid, groups by cn. */
const uuids = new Map<string, string>()

beforeAll(async () => {
  certificates = makeLdapCertificates()
  slapd = await startSlapd(certificates, "verified")
  for (const entry of await slapd.search(BASE_DN, "(|(objectClass=inetOrgPerson)(objectClass=groupOfNames))", [
    "entryUUID",
    "uid",
    "cn"
  ])) {
    // Requested attributes an entry lacks come back as [].
    const key = typeof entry["uid"] === "string" ? entry["uid"] : entry["cn"]
    if (typeof key === "string") uuids.set(key, String(entry["entryUUID"]))
  }
})

afterAll(async () => {
  await slapd?.stop()
  certificates?.remove()
})

const ldaps = () => directorySettings(slapd.ldapsUrl!, certificates.caPem)
const startTls = () => directorySettings(slapd.ldapUrl, certificates.caPem)

const signIn = (settings: LdapSettings, username: string, password: string) =>
  authenticate(settings, username, Redacted.make(password))

const refusal = (settings: LdapSettings, username: string, password: string) =>
  Effect.map(Effect.flip(signIn(settings, username, password)), (failure) => failure.reason)

const expectRefused = (settings: LdapSettings, username: string, password: string, reason: LdapFailureReason) =>
  Effect.map(refusal(settings, username, password), (actual) => expect(actual).toBe(reason))

const uuid = (key: string) => uuids.get(key) ?? expect.fail(`no entryUUID for ${key}`)
const groupsOf = (...names: ReadonlyArray<string>) =>
  names.map((name) => ({ id: uuid(name), name })).sort((a, b) => (a.id < b.id ? -1 : 1))

describe("LDAP sign-in", () => {
  it.live("signs in over ldaps://: the subject is the entryUUID, with the display name and the groups", () =>
    Effect.gen(function* () {
      const identity = yield* signIn(ldaps(), "alice", USERS.alice.password)
      expect(identity.subject).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/)
      expect(identity).toEqual({
        subject: uuid("alice").toLowerCase(),
        name: "Alice Liddell",
        groups: groupsOf("engineering", "operators")
      })
    })
  )

  it.live("signs in over ldap:// with StartTLS; the server itself refuses a cleartext bind there", () =>
    Effect.gen(function* () {
      expect(yield* signIn(startTls(), "bob", USERS.bob.password)).toEqual({
        subject: uuid("bob"),
        name: "Bob Builder",
        groups: groupsOf("auditors", "engineering")
      })
      const cleartext = new Client({ url: slapd.ldapUrl })
      const refused = yield* Effect.promise(() =>
        cleartext.bind(USERS.bob.dn, USERS.bob.password).then(
          () => "bound",
          (error: Error) => error.name
        )
      )
      yield* Effect.promise(() => cleartext.unbind())
      expect(refused).toBe("ConfidentialityRequiredError")
    })
  )

  it.live("a wrong password is invalid_credentials, an unknown name no_such_user", () =>
    Effect.gen(function* () {
      yield* expectRefused(ldaps(), "alice", "not-her-password", "invalid_credentials")
      yield* expectRefused(startTls(), "alice", USERS.bob.password, "invalid_credentials")
      yield* expectRefused(ldaps(), "nobody", "some-password", "no_such_user")
    })
  )

  it.live("an empty password is refused before any network, though the server would accept the bind", () =>
    Effect.gen(function* () {
      // The directory answers a DN with an empty password as an anonymous bind: success, as nobody.
      const client = new Client({ url: slapd.ldapsUrl!, tlsOptions: { ca: certificates.caPem, host: "127.0.0.1" } })
      const whoami = yield* Effect.promise(async () => {
        await client.bind(USERS.alice.dn, "")
        const answer = await client.exop("1.3.6.1.4.1.4203.1.11.3")
        await client.unbind()
        return answer.value ?? ""
      })
      expect(whoami).toBe("")

      yield* expectRefused(ldaps(), "alice", "", "invalid_input")
      // Nothing listens on port 1: the refusal came before any connection was tried.
      const nowhere = { ...ldaps(), url: "ldaps://127.0.0.1:1" }
      yield* expectRefused(nowhere, "alice", "", "invalid_input")
      yield* expectRefused(nowhere, "", "password", "invalid_input")
      yield* expectRefused(nowhere, "   ", "password", "invalid_input")
      yield* expectRefused(nowhere, "a".repeat(257), "password", "invalid_input")
      yield* expectRefused(nowhere, "ali\u0000ce", "password", "invalid_input")
      yield* expectRefused(nowhere, "alice", "p".repeat(1025), "invalid_input")
      yield* expectRefused(nowhere, "alice", "password", "unreachable")
    })
  )

  it.live("the typed name is escaped (RFC 4515): `*)(uid=*` and `*` match nothing", () =>
    Effect.gen(function* () {
      expect(userFilter(ldaps(), "*)(uid=*")).toBe("(&(objectClass=inetOrgPerson)(uid=\\2a\\29\\28uid=\\2a))")
      expect(escapeFilterValue("a\\b\u0000é\n")).toBe("a\\5cb\\00\\c3\\a9\\0a")
      yield* expectRefused(ldaps(), "*)(uid=*", USERS.alice.password, "no_such_user")
      // Unescaped, `*` would match every person: ambiguous_user, not no_such_user.
      yield* expectRefused(ldaps(), "*", USERS.alice.password, "no_such_user")
      yield* expectRefused(ldaps(), "alic*", USERS.alice.password, "no_such_user")
    })
  )

  it.live("two entries matching the name sign nobody in", () =>
    expectRefused(ldaps(), "twin", USERS.twinOne.password, "ambiguous_user")
  )

  it.live("more than 256 groups is too_many_groups; without a group search the same person signs in", () =>
    Effect.gen(function* () {
      yield* expectRefused(ldaps(), "many", USERS.many.password, "too_many_groups")
      const identity = yield* signIn(withoutGroups(ldaps()), "many", USERS.many.password)
      expect(identity.groups).toEqual([])
      expect(identity.subject).toBe(uuid("many"))
    })
  )

  it.live("the person's DN is escaped in the {{dn}} group search (commas, parentheses, an asterisk)", () =>
    Effect.gen(function* () {
      const identity = yield* signIn(ldaps(), "kim", USERS.kim.password)
      expect(identity.groups).toEqual(groupsOf("operators"))
      const filter = groupFilter(ldaps(), `cn=Kim O'Hara\\, Ops (night) *,${PEOPLE_DN}`, "kim")
      expect(filter).toBe(
        `(&(objectClass=groupOfNames)(member=cn=Kim O'Hara\\5c, Ops \\28night\\29 \\2a,${PEOPLE_DN}))`
      )
    })
  )

  it.live("a {{username}} group search (posixGroup memberUid)", () =>
    Effect.gen(function* () {
      const settings: LdapSettings = {
        ...ldaps(),
        group_search_base: POSIX_GROUPS_DN,
        group_search_filter: "(&(objectClass=posixGroup)(memberUid={{username}}))"
      }
      const identity = yield* signIn(settings, "alice", USERS.alice.password)
      expect(identity.groups.map((group) => group.name)).toEqual(["developers"])
      expect(identity.groups[0]?.id).toMatch(/^[0-9a-f-]{36}$/)
    })
  )

  it.live("names and passwords outside ASCII", () =>
    Effect.gen(function* () {
      expect(yield* signIn(startTls(), "jürgen", USERS.juergen.password)).toEqual({
        subject: uuid("jürgen"),
        name: "Jürgen Groß",
        groups: groupsOf("engineering")
      })
      yield* expectRefused(startTls(), "jürgen", "jurgen-passwort", "invalid_credentials")
    })
  )

  it.live("stable ids: text as it is, binary as hex, missing is missing_stable_id; no display name falls back", () =>
    Effect.gen(function* () {
      const byEmployeeNumber = { ...ldaps(), user_id_attribute: "employeeNumber" }
      expect((yield* signIn(byEmployeeNumber, "alice", USERS.alice.password)).subject).toBe("E-1001")
      yield* expectRefused(byEmployeeNumber, "bob", USERS.bob.password, "missing_stable_id")
      const byAudio = { ...ldaps(), user_id_attribute: "audio" }
      expect((yield* signIn(byAudio, "binary", USERS.binary.password)).subject).toBe(BINARY_ID.toString("hex"))
      const byMissingGroupId = { ...ldaps(), group_id_attribute: "employeeNumber" }
      yield* expectRefused(byMissingGroupId, "alice", USERS.alice.password, "missing_stable_id")
      expect((yield* signIn(ldaps(), "dave", USERS.dave.password)).name).toBe("dave")
    })
  )

  it.live("a refused service account, a failing search and a closed port each have their reason", () =>
    Effect.gen(function* () {
      yield* expectRefused(
        { ...ldaps(), bind_password: Redacted.make("wrong") },
        "alice",
        USERS.alice.password,
        "service_bind_failed"
      )
      yield* expectRefused(
        { ...ldaps(), user_search_base: `ou=nowhere,${BASE_DN}` },
        "alice",
        USERS.alice.password,
        "search_failed"
      )
      yield* expectRefused(
        { ...ldaps(), group_search_base: `ou=nowhere,${GROUPS_DN}` },
        "alice",
        USERS.alice.password,
        "search_failed"
      )
      yield* expectRefused({ ...ldaps(), url: "ldaps://127.0.0.1:1" }, "alice", USERS.alice.password, "unreachable")
    })
  )

  it.live("no refusal's detail holds the password or the typed name", () =>
    Effect.gen(function* () {
      const cases: ReadonlyArray<readonly [LdapSettings, string, string]> = [
        [ldaps(), "typed-name-x", "typed-password-x"],
        [ldaps(), "alice", "typed-password-x"],
        [{ ...ldaps(), user_search_base: `ou=nowhere,${BASE_DN}` }, "typed-name-x", "typed-password-x"],
        [{ ...ldaps(), group_search_base: `ou=nowhere,${GROUPS_DN}` }, "alice", USERS.alice.password],
        [{ ...ldaps(), url: "ldaps://127.0.0.1:1" }, "typed-name-x", "typed-password-x"]
      ]
      for (const [settings, username, password] of cases) {
        const failure = yield* Effect.flip(signIn(settings, username, password))
        expect(failure.detail).not.toContain("typed-")
        expect(failure.detail).not.toContain(USERS.alice.password)
        expect(JSON.stringify(failure)).not.toContain("typed-password-x")
      }
    })
  )

  it.live("settings with problems are refused before any network", () =>
    Effect.gen(function* () {
      const failure = yield* Effect.flip(
        signIn({ ...ldaps(), user_search_filter: "(uid=*)" }, "alice", USERS.alice.password)
      )
      expect(failure.reason).toBe("invalid_settings")
      expect(failure.detail).toContain("user_search_filter: must contain {{username}} exactly once (found 0)")
    })
  )
})
