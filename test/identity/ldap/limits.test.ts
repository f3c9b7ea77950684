/**
 * LDAP sign-in limits (docs/ldap.md, "Limits"): the local sign-in's failed-attempt windows (per name and
 * address, per address, per name), on the Effect clock; and at most 16 sign-ins talking to the
 * directory at once, 64 more waiting, the rest refused as `busy`.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Either, Layer, Redacted, TestClock } from "effect"
import { LoginThrottle, MAX_ACCOUNT_ADDRESS_FAILURES, MAX_ADDRESS_FAILURES } from "../../../src/auth/throttle.js"
import { authenticate, LdapDirectory } from "../../../src/identity/ldap/authenticate.js"
import { ldapNamespace } from "../../../src/identity/ldap/namespace.js"
import {
  LdapSignIn,
  MAX_CONCURRENT_SIGN_INS,
  MAX_WAITING_SIGN_INS,
  throttleName
} from "../../../src/identity/ldap/sign-in.js"
import {
  directorySettings,
  type LdapCertificates,
  makeLdapCertificates,
  type Slapd,
  startSlapd,
  USERS
} from "../../support/slapd.js"

let certificates: LdapCertificates
let slapd: Slapd

beforeAll(async () => {
  certificates = makeLdapCertificates()
  slapd = await startSlapd(certificates, "verified")
})

afterAll(async () => {
  await slapd?.stop()
  certificates?.remove()
})

const settings = () => directorySettings(slapd.ldapsUrl!, certificates.caPem)

/** The real directory, counting how many sign-ins reach it and how many run at once. */
const countingDirectory = () => {
  const counts = { calls: 0, running: 0, most: 0 }
  const layer = Layer.succeed(
    LdapDirectory,
    LdapDirectory.make({
      authenticate: (...args: Parameters<typeof authenticate>) =>
        Effect.suspend(() => {
          counts.calls += 1
          counts.running += 1
          counts.most = Math.max(counts.most, counts.running)
          return authenticate(...args)
        }).pipe(
          Effect.ensuring(
            Effect.sync(() => {
              counts.running -= 1
            })
          )
        )
    })
  )
  return { counts, layer: LdapSignIn.DefaultWithoutDependencies.pipe(Layer.provide(layer)) }
}

const attempt = (username: string, password: string, address: string) =>
  Effect.flatMap(LdapSignIn, (ldap) =>
    Effect.either(ldap.signIn(settings(), { username, password: Redacted.make(password), address }))
  )

const reasonOf = (outcome: Either.Either<unknown, { readonly reason: string }>) =>
  Either.isLeft(outcome) ? outcome.left.reason : "signed_in"

describe("LDAP sign-in limits", () => {
  it.effect(
    "5 wrong passwords for a name at an address, then throttled without asking the directory, until 15 minutes pass",
    () => {
      const { counts, layer } = countingDirectory()
      return Effect.gen(function* () {
        for (let index = 0; index < MAX_ACCOUNT_ADDRESS_FAILURES; index++) {
          expect(reasonOf(yield* attempt("alice", "wrong-password", "192.0.2.1"))).toBe("invalid_credentials")
        }
        const calls = counts.calls
        const refused = yield* attempt("alice", USERS.alice.password, "192.0.2.1")
        expect(Either.isLeft(refused) && refused.left).toMatchObject({
          reason: "throttled",
          retryAfterSeconds: 900,
          throttled: { window: "account_at_address", started: true }
        })
        // Spelling the name another way is the same name to the directory, and to the throttle.
        expect(reasonOf(yield* attempt(" ALICE\u200b ", USERS.alice.password, "192.0.2.1"))).toBe("throttled")
        expect(counts.calls).toBe(calls)
        // Elsewhere, the owner still signs in.
        expect(reasonOf(yield* attempt("alice", USERS.alice.password, "198.51.100.7"))).toBe("signed_in")

        yield* TestClock.adjust("15 minutes")
        const signedIn = yield* attempt("alice", USERS.alice.password, "192.0.2.1")
        expect(Either.isRight(signedIn) && signedIn.right.lockoutsEnded).toEqual(["account_at_address"])
        expect(Either.isRight(signedIn) && signedIn.right.namespace).toBe(ldapNamespace(settings()))
      }).pipe(Effect.provide(layer), Effect.provide(LoginThrottle.Default))
    }
  )

  it.effect("an address spraying unknown names is throttled across names", () =>
    Effect.gen(function* () {
      for (let index = 0; index < MAX_ADDRESS_FAILURES; index++) {
        expect(reasonOf(yield* attempt(`nobody-${index}`, "some-password", "192.0.2.9"))).toBe("no_such_user")
      }
      const refused = yield* attempt("alice", USERS.alice.password, "192.0.2.9")
      expect(Either.isLeft(refused) && refused.left.throttled?.window).toBe("address")
    }).pipe(Effect.provide(LdapSignIn.Default), Effect.provide(LoginThrottle.Default))
  )

  it.effect("refusals that are no guess are not counted: bad input, a broken directory, an ambiguous name", () =>
    Effect.gen(function* () {
      const broken = { ...settings(), bind_password: Redacted.make("not-the-service-password") }
      const signIn = yield* LdapSignIn
      for (let index = 0; index < 2 * MAX_ACCOUNT_ADDRESS_FAILURES; index++) {
        const outcomes = yield* Effect.all([
          Effect.either(
            signIn.signIn(settings(), { username: "alice", password: Redacted.make(""), address: "192.0.2.3" })
          ),
          Effect.either(
            signIn.signIn(broken, { username: "alice", password: Redacted.make("password"), address: "192.0.2.3" })
          ),
          attempt("twin", USERS.twinOne.password, "192.0.2.3")
        ])
        expect(outcomes.map(reasonOf)).toEqual(["invalid_input", "service_bind_failed", "ambiguous_user"])
      }
      expect(reasonOf(yield* attempt("alice", USERS.alice.password, "192.0.2.3"))).toBe("signed_in")
      expect(reasonOf(yield* attempt("twin", USERS.twinOne.password, "192.0.2.3"))).toBe("ambiguous_user")
    }).pipe(Effect.provide(LdapSignIn.Default), Effect.provide(LoginThrottle.Default))
  )

  it.live(`40 parallel sign-ins: at most ${MAX_CONCURRENT_SIGN_INS} talk to the directory at once, all succeed`, () => {
    const { counts, layer } = countingDirectory()
    return Effect.gen(function* () {
      const outcomes = yield* Effect.forEach(
        Array.from({ length: 40 }, (_, index) => index),
        (index) =>
          attempt(
            index % 2 === 0 ? "alice" : "bob",
            index % 2 === 0 ? USERS.alice.password : USERS.bob.password,
            `10.0.0.${index}`
          ),
        { concurrency: "unbounded" }
      )
      expect(outcomes.map(reasonOf)).toEqual(Array.from({ length: 40 }, () => "signed_in"))
      expect(counts.calls).toBe(40)
      expect(counts.most).toBe(MAX_CONCURRENT_SIGN_INS)
    }).pipe(Effect.provide(layer), Effect.provide(LoginThrottle.Default))
  })

  it.live(
    `past ${MAX_CONCURRENT_SIGN_INS} running and ${MAX_WAITING_SIGN_INS} waiting, a sign-in is refused as busy`,
    () =>
      Effect.gen(function* () {
        const open = yield* Deferred.make<void>()
        let calls = 0
        const stuck = Layer.succeed(
          LdapDirectory,
          LdapDirectory.make({
            authenticate: () =>
              Effect.zipRight(
                Effect.sync(() => {
                  calls += 1
                }),
                Effect.as(Deferred.await(open), { subject: "s", name: "n", groups: [] })
              )
          })
        )
        yield* Effect.gen(function* () {
          const signIn = yield* LdapSignIn
          const admitted = MAX_CONCURRENT_SIGN_INS + MAX_WAITING_SIGN_INS
          const fibers = yield* Effect.forEach(
            Array.from({ length: admitted }, (_, index) => index),
            (index) =>
              Effect.fork(
                signIn.signIn(settings(), {
                  username: `user-${index}`,
                  password: Redacted.make("password"),
                  address: `10.1.${Math.floor(index / 200)}.${index % 200}`
                })
              )
          )
          yield* Effect.yieldNow()
          while (calls < MAX_CONCURRENT_SIGN_INS) yield* Effect.sleep("5 millis")
          const busy = yield* Effect.flip(
            signIn.signIn(settings(), { username: "late", password: Redacted.make("password"), address: "10.2.0.1" })
          )
          expect(busy.reason).toBe("busy")
          expect(calls).toBe(MAX_CONCURRENT_SIGN_INS)
          yield* Deferred.succeed(open, undefined)
          const results = yield* Effect.forEach(fibers, (fiber) => fiber.await)
          expect(results.every((exit) => exit._tag === "Success")).toBe(true)
          expect(calls).toBe(admitted)
        }).pipe(
          Effect.provide(LdapSignIn.DefaultWithoutDependencies.pipe(Layer.provide(stuck))),
          Effect.provide(LoginThrottle.Default)
        )
      })
  )
})

describe("throttle names", () => {
  it("a name is counted roughly as the directory compares it", () => {
    const namespace = ldapNamespace(directorySettings("ldaps://ldap.example.com", undefined))
    const alice = throttleName(namespace, "alice")
    expect(throttleName(namespace, "  alice ")).toBe(alice)
    expect(throttleName(namespace, "ali\u00adce")).toBe(alice)
    expect(throttleName(namespace, "ａｌｉｃｅ")).toBe(alice)
    expect(throttleName(namespace, "alice smith")).toBe(throttleName(namespace, "alice \t smith"))
    expect(throttleName(namespace, "alice")).not.toBe(throttleName(`${namespace}x`, "alice"))
  })
})
