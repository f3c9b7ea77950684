import { Duration, Effect, Redacted } from "effect"
import type { Client, Entry } from "ldapts"
import { hasControlCharacter } from "../../text.js"
import {
  bindService,
  connectionFailure,
  describeError,
  OPERATION_TIMEOUT_MS,
  openConnection,
  request
} from "./connection.js"
import { type LdapSignInFailed, refuse } from "./failure.js"
import { groupFilter, toLdapFilter, userFilter } from "./filter.js"
import { ldapts } from "./ldapts.js"
import { type LdapEndpoint, type LdapSettings, parseLdapUrl, validateLdapSettings } from "./settings.js"
import { displayNameOf, stableIdOf, valuesOf } from "./stable-id.js"

/** Longer names are refused before anything is sent or counted (the same bound as local accounts). */
export const MAX_USERNAME_LENGTH = 256
export const MAX_PASSWORD_LENGTH = 1024
/** A person in more groups is refused (`too_many_groups`) rather than given an arbitrary part of them. */
export const MAX_GROUPS = 256
/** The whole sign-in, however the time limits of its steps add up. */
export const SIGN_IN_TIMEOUT_MS = 30_000

export interface LdapGroup {
  /** The group's stable id (`group_id_attribute`). */
  readonly id: string
  /** `group_name_attribute`, or the group's DN when it has none. */
  readonly name: string
}

/** Who signed in: the subject is the stable id, unique within the directory's namespace (`ldapNamespace`). */
export interface LdapIdentity {
  readonly subject: string
  /** `user_name_attribute`, or the name the person typed when the entry has none. */
  readonly name: string
  /** The groups the group search found (direct ones: nested groups are not followed), by id. */
  readonly groups: ReadonlyArray<LdapGroup>
}

/**
 * What may be sent at all. The empty password matters most: a bind with a DN and an empty password is
 * an "unauthenticated bind" (RFC 4513 §5.1.2), which servers allowing anonymous access answer with
 * success — it would sign anyone in as anyone.
 */
export const inputProblem = (username: string, password: Redacted.Redacted<string>): LdapSignInFailed | undefined => {
  const secret = Redacted.value(password)
  if (username.trim() === "") return refuse("invalid_input", "empty user name")
  if (username.length > MAX_USERNAME_LENGTH)
    return refuse("invalid_input", `user name over ${MAX_USERNAME_LENGTH} characters`)
  if (/\p{Cs}/u.test(username)) return refuse("invalid_input", "user name is not well-formed Unicode")
  if (hasControlCharacter(username)) return refuse("invalid_input", "user name holds a control character")
  if (secret === "") return refuse("invalid_input", "empty password")
  if (secret.length > MAX_PASSWORD_LENGTH)
    return refuse("invalid_input", `password over ${MAX_PASSWORD_LENGTH} characters`)
  return undefined
}

/** Settings with problems, as one refusal naming them all (`validateLdapSettings`). */
export const settingsProblem = (settings: LdapSettings): LdapSignInFailed | undefined => {
  const problems = validateLdapSettings(settings)
  return problems.length === 0
    ? undefined
    : refuse("invalid_settings", problems.map(({ path, message }) => `${path}: ${message}`).join("; "))
}

/**
 * Only what cannot quote the filter (which holds the typed name) is described: result codes, socket
 * errors, and ldapts' own timeout and connection messages.
 */
const searchFailure = (what: string) => (error: unknown) => {
  const safe =
    error instanceof ldapts().ResultCodeError ||
    (error instanceof Error &&
      ((error as NodeJS.ErrnoException).code !== undefined ||
        /^\w+: Operation timed out$|^Connection closed before|^Socket error/.test(error.message)))
  return refuse("search_failed", `${what}: ${safe ? describeError(error) : "failed"}`)
}

const search = (
  client: Client,
  what: string,
  base: string,
  filterText: string,
  attributes: Array<string>,
  limit: number
) =>
  Effect.try({
    try: () => toLdapFilter(filterText),
    catch: () => refuse("search_failed", `${what}: the filter could not be built`)
  }).pipe(
    Effect.flatMap((filter) =>
      request(
        () =>
          client.search(base, {
            scope: "sub",
            filter,
            attributes,
            // One more than is acceptable: enough to tell "too many" from "just enough".
            sizeLimit: limit + 1,
            timeLimit: Math.ceil(OPERATION_TIMEOUT_MS / 1000)
          }),
        searchFailure(what)
      )
    ),
    Effect.map((result) => result.searchEntries)
  )

interface FoundUser {
  readonly dn: string
  readonly subject: string
  readonly name: string
}

const findUser = (client: Client, settings: LdapSettings, username: string) =>
  Effect.gen(function* () {
    const entries = yield* search(
      client,
      "user search",
      settings.user_search_base,
      userFilter(settings, username),
      [settings.user_id_attribute, settings.user_name_attribute],
      1
    )
    const [entry, second] = entries
    if (entry === undefined) return yield* refuse("no_such_user", "the user search found no entry")
    if (second !== undefined) return yield* refuse("ambiguous_user", "the user search found more than one entry")
    // An empty DN would make the password bind an anonymous one.
    if (entry.dn.trim() === "") return yield* refuse("search_failed", "user search: an entry without a DN")
    const subject = stableIdOf(settings.user_id_attribute, valuesOf(entry, settings.user_id_attribute))
    if (subject === undefined) {
      return yield* refuse("missing_stable_id", `${entry.dn} has no single ${settings.user_id_attribute} value`)
    }
    const name = displayNameOf(valuesOf(entry, settings.user_name_attribute)) ?? username
    return { dn: entry.dn, subject, name } satisfies FoundUser
  })

const groupOf = (settings: LdapSettings, idAttribute: string, entry: Entry) =>
  Effect.suspend(() => {
    const id = stableIdOf(idAttribute, valuesOf(entry, idAttribute))
    if (id === undefined) {
      return Effect.fail(refuse("missing_stable_id", `group ${entry.dn} has no single ${idAttribute} value`))
    }
    const name = displayNameOf(valuesOf(entry, settings.group_name_attribute ?? "")) ?? entry.dn
    return Effect.succeed({ id, name } satisfies LdapGroup)
  })

const findGroups = (client: Client, settings: LdapSettings, user: FoundUser, username: string) =>
  Effect.gen(function* () {
    const filterText = groupFilter(settings, user.dn, username)
    const base = settings.group_search_base
    const idAttribute = settings.group_id_attribute
    const nameAttribute = settings.group_name_attribute
    if (filterText === undefined || base === undefined || idAttribute === undefined || nameAttribute === undefined) {
      return []
    }
    const entries = yield* search(client, "group search", base, filterText, [idAttribute, nameAttribute], MAX_GROUPS)
    if (entries.length > MAX_GROUPS) {
      return yield* refuse("too_many_groups", `the group search found more than ${MAX_GROUPS} groups`)
    }
    const groups = yield* Effect.forEach(entries, (entry) => groupOf(settings, idAttribute, entry))
    const byId = new Map(groups.map((group) => [group.id, group]))
    return [...byId.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
  })

const signInAt = (
  settings: LdapSettings,
  endpoint: LdapEndpoint,
  username: string,
  password: Redacted.Redacted<string>
) =>
  Effect.gen(function* () {
    const service = yield* openConnection(settings, endpoint)
    yield* bindService(service, settings)
    const user = yield* findUser(service, settings, username)
    // The password is checked by the directory itself, on a connection of its own: the service
    // connection stays the service account's for the group search.
    yield* Effect.scoped(
      Effect.flatMap(openConnection(settings, endpoint), (own) =>
        request(
          () => own.bind(user.dn, Redacted.value(password)),
          (error) =>
            error instanceof ldapts().ResultCodeError
              ? refuse("invalid_credentials", `user bind: ${describeError(error)}`)
              : connectionFailure("user bind", error)
        )
      )
    )
    const groups = yield* findGroups(service, settings, user, username)
    return { subject: user.subject, name: user.name, groups } satisfies LdapIdentity
  })

/**
 * Signs `username` in against the directory (docs/ldap.md, "How a sign-in goes"): bind as the service
 * account, find exactly one entry with the user filter, read its stable id and name, bind as that entry
 * with `password` on a fresh connection, then (when configured) find the groups. Input and settings are
 * checked before anything is sent. No throttling here: `LdapSignIn` adds it.
 */
export const authenticate = Effect.fn("LdapDirectory.authenticate")(function* (
  settings: LdapSettings,
  username: string,
  password: Redacted.Redacted<string>
) {
  const refused = inputProblem(username, password) ?? settingsProblem(settings)
  if (refused !== undefined) return yield* refused
  const endpoint = parseLdapUrl(settings.url)
  if (typeof endpoint === "string") return yield* refuse("invalid_settings", `url: ${endpoint}`)
  return yield* Effect.scoped(signInAt(settings, endpoint, username, password)).pipe(
    Effect.timeoutFail({
      duration: Duration.millis(SIGN_IN_TIMEOUT_MS),
      onTimeout: () => refuse("unreachable", `the sign-in took longer than ${SIGN_IN_TIMEOUT_MS} ms`)
    })
  )
})

/** The directory as a service, so `LdapSignIn` can be given another one in tests. */
export class LdapDirectory extends Effect.Service<LdapDirectory>()("gateway/LdapDirectory", {
  succeed: { authenticate } as const
}) {}
