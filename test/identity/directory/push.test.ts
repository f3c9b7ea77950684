/**
 * docs/directory.md — `PUT /sso/directory` on both stores: the bearer secret before anything is read,
 * the 8 MiB limit while reading, a refused snapshot writes nothing, versions strictly increase (racing
 * pushes: exactly one wins), a snapshot is a complete replacement (omitted people inactive), directory
 * membership replaces sign-in claims for that provider, direct memberships in locally managed groups
 * are untouched, and every refusal and application writes one log line.
 */
import { describe, expect, it } from "@effect/vitest"
import { Cause, Clock, Effect, Exit } from "effect"
import { DirectorySnapshots } from "../../../src/identity/directory/apply.js"
import { PolicyWrites } from "../../../src/policy/writes.js"
import { DirectoryRepo } from "../../../src/store/directory.js"
import { GroupRepo } from "../../../src/store/groups.js"
import { MembershipRepo } from "../../../src/store/memberships.js"
import { UserRepo } from "../../../src/store/users.js"
import { adminToken, ifMatch, managementApi } from "../../support/admin-api.js"
import { storeKinds } from "../../support/databases.js"
import { DIRECTORY_TOKEN, directoryGateway, push, snapshot } from "../../support/directory.js"
import { inGateway, type OAuthGateway, oauthGateway } from "../../support/oauth-gateway.js"

/** The enterprise people of `provider`, by subject, with their memberships by group name and source. */
const people = (gateway: OAuthGateway, provider: string) =>
  inGateway(gateway)(
    Effect.gen(function* () {
      const rows = (yield* (yield* UserRepo).page("", 1000)).filter((user) => user.namespace === provider)
      const groups = new Map((yield* (yield* GroupRepo).list).map((group) => [group.id, group.name]))
      const out: Record<string, { active: boolean; status: string; groups: Array<string> }> = {}
      for (const user of rows) {
        const memberships = yield* (yield* MembershipRepo).forUser(user.id)
        out[user.external_subject ?? ""] = {
          active: user.directory_active,
          status: user.status,
          groups: memberships.map((row) => `${groups.get(row.group_id)}:${row.source}`).sort()
        }
      }
      return out
    })
  )

describe.each(storeKinds)("PUT /sso/directory (%s)", (kind) => {
  it.scoped("the secret is checked before the body; a wrong, missing or malformed one is 401 and logged", () =>
    Effect.gen(function* () {
      const { gateway, logs } = yield* directoryGateway({ kind })
      for (const token of [null, "wrong-secret", `${DIRECTORY_TOKEN}x`]) {
        const answer = yield* push(gateway, snapshot(1, [["alice", true]]), token)
        expect(answer.status).toBe(401)
        expect(answer.body["error"]).toBe("invalid_token")
        expect(answer.headers.get("www-authenticate")).toContain("Bearer")
      }
      expect(logs.events("directory.push_refused").map((line) => line["reason"])).toEqual([
        "missing_secret",
        "wrong_secret",
        "wrong_secret"
      ])
      expect(logs.text()).not.toContain(DIRECTORY_TOKEN)
    })
  )

  it.scoped(
    "applies a snapshot: people created pending with their groups and departments; the answer counts what changed",
    () =>
      Effect.gen(function* () {
        const { gateway, logs, provider } = yield* directoryGateway({ kind })
        const answer = yield* push(
          gateway,
          snapshot(3, [
            ["alice", true, ["eng"], ["rd"]],
            ["bob", false, ["ops"]]
          ])
        )
        expect(answer.status).toBe(200)
        expect(answer.body).toEqual({
          provider,
          version: 3,
          users: 2,
          groups: 2,
          departments: 1,
          created: 2,
          activated: 0,
          deactivated: 0,
          memberships_added: 3,
          memberships_removed: 0
        })
        expect(yield* people(gateway, provider)).toEqual({
          alice: { active: true, status: "pending", groups: ["ENG:directory", "RD:directory"] },
          bob: { active: false, status: "pending", groups: ["OPS:directory"] }
        })
        expect(logs.events("directory.snapshot_applied")).toEqual([expect.objectContaining({ version: 3, users: 2 })])
        // The Management API shows the same: each person's groups with their source, each group's members.
        const api = managementApi(gateway, yield* adminToken(gateway))
        const identities = api.get("/api/v1/identities").pipe(
          Effect.map(
            (answer) =>
              answer.body as {
                users: Array<{ external_subject: string | null; groups: Array<{ name: string; source: string }> }>
                groups: Array<{ name: string; members: number }>
              }
          )
        )
        const memberCounts = () =>
          Effect.map(identities, (listed) =>
            Object.fromEntries(
              listed.groups
                .filter((group) => group.name !== "Administrators")
                .map((group) => [group.name, group.members])
            )
          )
        const alice = (yield* identities).users.find((user) => user.external_subject === "alice")
        expect(alice?.groups.map((group) => `${group.name}:${group.source}`).sort()).toEqual([
          "ENG:directory",
          "RD:directory"
        ])
        expect(yield* memberCounts()).toEqual({ ENG: 1, OPS: 1, RD: 1 })

        // The same people with one change: only that is written.
        const again = yield* push(
          gateway,
          snapshot(4, [
            ["alice", true, ["eng", "ops"], ["rd"]],
            ["bob", false, ["ops"]]
          ])
        )
        expect(again.body).toMatchObject({ created: 0, memberships_added: 1, memberships_removed: 0, activated: 0 })
        // Member counts follow the new snapshot (they are kept only until the next one is applied).
        expect(yield* memberCounts()).toEqual({ ENG: 1, OPS: 2, RD: 1 })
      })
  )

  it.scoped("stale and repeated versions are 409; of four racing pushes of one version exactly one applies", () =>
    Effect.gen(function* () {
      const { gateway, logs } = yield* directoryGateway({ kind })
      expect((yield* push(gateway, snapshot(5, [["alice", true]]))).status).toBe(200)
      for (const version of [5, 4, 1]) {
        const answer = yield* push(gateway, snapshot(version, [["alice", false]]))
        expect([version, answer.status, answer.body["error"]]).toEqual([version, 409, "stale_version"])
      }
      const racing = yield* Effect.all(
        [1, 2, 3, 4].map((n) => push(gateway, snapshot(6, [[`racer-${n}`, true]]))),
        { concurrency: "unbounded" }
      )
      expect(racing.map((answer) => answer.status).sort()).toEqual([200, 409, 409, 409])
      expect(logs.events("directory.push_refused").filter((line) => line["reason"] === "stale_version")).toHaveLength(6)
    })
  )

  it.scoped("a complete replacement: people omitted or inactive become inactive, and active again when listed", () =>
    Effect.gen(function* () {
      const { gateway, provider } = yield* directoryGateway({ kind })
      yield* push(
        gateway,
        snapshot(1, [
          ["alice", true, ["eng"]],
          ["bob", true, ["eng"]],
          ["carol", true]
        ])
      )
      const second = yield* push(
        gateway,
        snapshot(2, [
          ["alice", true, ["ops"]],
          ["carol", false]
        ])
      )
      expect(second.body).toMatchObject({ deactivated: 2, activated: 0, memberships_added: 1, memberships_removed: 2 })
      expect(yield* people(gateway, provider)).toEqual({
        alice: { active: true, status: "pending", groups: ["OPS:directory"] },
        bob: { active: false, status: "pending", groups: [] },
        carol: { active: false, status: "pending", groups: [] }
      })
      const third = yield* push(
        gateway,
        snapshot(3, [
          ["alice", true, ["ops"]],
          ["bob", true],
          ["carol", true]
        ])
      )
      expect(third.body).toMatchObject({ activated: 2, deactivated: 0 })
    })
  )

  it.scoped(
    "directory membership replaces sign-in claims for that provider; direct memberships and local status stay; a later sign-in changes nothing; reactivation does not undo a disable",
    () =>
      Effect.gen(function* () {
        const { gateway, provider } = yield* directoryGateway({ kind })
        const admit = (groups: ReadonlyArray<string>) =>
          inGateway(gateway)(
            Effect.gen(function* () {
              const at = new Date(yield* Clock.currentTimeMillis)
              return yield* (yield* PolicyWrites).admitEnterpriseUser(
                {
                  namespace: provider,
                  subject: "alice",
                  name: "Alice",
                  groups: groups.map((id) => ({ externalId: id, name: id.toUpperCase() })),
                  departments: [],
                  bootstrap: false
                },
                at
              )
            })
          )
        const alice = yield* admit(["claimed"])
        // An administrator enables her and adds her to the built-in Administrators group directly.
        const api = managementApi(gateway, yield* adminToken(gateway))
        const listed = (yield* api.get("/api/v1/identities")).body["users"] as Array<Record<string, unknown>>
        const record = listed.find((user) => user["id"] === alice.id)!
        const enabled = yield* api.put(
          `/api/v1/identities/${alice.id}`,
          {
            enabled: true,
            groups: ["administrators", ...(record["groups"] as Array<{ id: string }>).map((g) => g.id)]
          },
          ifMatch(record)
        )
        expect(enabled.status).toBe(200)
        expect((yield* people(gateway, provider))["alice"]?.groups).toEqual(["Administrators:direct", "CLAIMED:claims"])

        expect((yield* push(gateway, snapshot(1, [["alice", true, ["eng"]]]))).status).toBe(200)
        expect((yield* people(gateway, provider))["alice"]).toEqual({
          active: true,
          status: "enabled",
          groups: ["Administrators:direct", "ENG:directory"]
        })
        // Sign-in claims no longer change anything for this provider.
        yield* admit(["claimed", "other"])
        expect((yield* people(gateway, provider))["alice"]?.groups).toEqual(["Administrators:direct", "ENG:directory"])
        // A directory deactivation does not disable her locally; a reactivation does not enable a disabled account.
        yield* push(gateway, snapshot(2, []))
        expect((yield* people(gateway, provider))["alice"]).toMatchObject({ active: false, status: "enabled" })
        // An administrator disables her; the directory listing her as active again does not undo that.
        const current = ((yield* api.get("/api/v1/identities")).body["users"] as Array<Record<string, unknown>>).find(
          (user) => user["id"] === alice.id
        )!
        expect((yield* api.put(`/api/v1/identities/${alice.id}`, { enabled: false }, ifMatch(current))).status).toBe(
          200
        )
        yield* push(gateway, snapshot(3, [["alice", true, ["eng"]]]))
        expect((yield* people(gateway, provider))["alice"]).toMatchObject({ active: true, status: "disabled" })
      }),
    60_000
  )

  it.scoped(
    "an apply handed a membership of a group it does not know rolls back whole instead of granting another group",
    () =>
      Effect.gen(function* () {
        const { gateway, provider } = yield* directoryGateway({ kind })
        // What the check refuses (an undeclared group), handed to the apply directly as if it had slipped through.
        const unchecked = {
          version: 7,
          groups: [{ kind: "group" as const, id: "eng", name: "ENG" }],
          users: [{ subject: "alice", name: "Alice", active: true, groups: ["ghost"], departments: [] }]
        }
        const exit = yield* inGateway(gateway)(
          Effect.exit(
            Effect.flatMap(Clock.currentTimeMillis, (now) =>
              Effect.flatMap(DirectorySnapshots, (snapshots) => snapshots.apply(provider, unchecked, new Date(now)))
            )
          )
        )
        expect(Exit.isFailure(exit) && Cause.isDie(exit.cause)).toBe(true)
        expect(yield* people(gateway, provider)).toEqual({})
        expect(
          yield* inGateway(gateway)(Effect.flatMap(DirectoryRepo, (repo) => repo.version(provider)))
        ).toBeUndefined()
      })
  )

  it.scoped("bad input is refused precisely and writes nothing", () =>
    Effect.gen(function* () {
      const { gateway, logs, provider } = yield* directoryGateway({ kind })
      const cases: ReadonlyArray<readonly [unknown, number, string]> = [
        ["{not json", 400, "The body is not JSON."],
        [{ ...snapshot(1, [["alice", true]]), roles: ["admin"] }, 400, "roles: privilege fields are not accepted"],
        [snapshot(1, [["alice", true, ["nope"]]]), 400, 'users[0].groups[0]: "nope" is not a declared group'],
        [{ version: 1, groups: [], users: [], extra: 1 }, 400, "extra: unknown field"]
      ]
      for (const [body, status, message] of cases) {
        const answer = yield* push(gateway, body)
        expect([message, answer.status, answer.body["error"]]).toEqual([message, status, "invalid_snapshot"])
        expect(String(answer.body["error_description"])).toContain(message)
      }
      expect(logs.events("directory.push_refused").map((line) => line["reason"])).toEqual([
        "invalid_snapshot",
        "privilege_field",
        "invalid_snapshot",
        "invalid_snapshot"
      ])
      expect(yield* people(gateway, provider)).toEqual({})
      // A version refused for its content is still free.
      expect((yield* push(gateway, snapshot(1, [["alice", true]]))).status).toBe(200)
    })
  )
})

describe("PUT /sso/directory limits", () => {
  it.scoped("a body over 8 MiB is refused with 413 while it is read; the wrong content type with 415", () =>
    Effect.gen(function* () {
      const { gateway } = yield* directoryGateway()
      const huge = JSON.stringify({ version: 1, groups: [], users: [], padding: "x".repeat(8 * 1024 * 1024) })
      const answer = yield* push(gateway, huge)
      expect(answer.status).toBe(413)
      expect(answer.body["error"]).toBe("payload_too_large")
      // The secret is compared before any of the body is read: a wrong one is 401 whatever follows.
      expect((yield* push(gateway, huge, "wrong")).status).toBe(401)
      const form = yield* Effect.promise(() =>
        fetch(`${gateway.baseUrl}/sso/directory`, {
          method: "PUT",
          headers: { authorization: `Bearer ${DIRECTORY_TOKEN}`, "content-type": "text/plain" },
          body: "{}"
        })
      )
      expect(form.status).toBe(415)
    })
  )

  it.scoped(
    "ten refused pushes from one address: the next without the secret is 429 with Retry-After; the adapter's still applies",
    () =>
      Effect.gen(function* () {
        const { gateway } = yield* directoryGateway()
        for (let n = 0; n < 10; n++) expect((yield* push(gateway, {}, "wrong")).status).toBe(401)
        const throttled = yield* push(gateway, snapshot(1, []), "wrong")
        expect(throttled.status).toBe(429)
        expect(Number(throttled.headers.get("retry-after"))).toBeGreaterThan(0)
        expect((yield* push(gateway, snapshot(1, []))).status).toBe(200)
      })
  )

  it.scoped("without auth.sso.directory_token_env there is no such endpoint (404); GET is 405", () =>
    Effect.gen(function* () {
      const plain = yield* oauthGateway()
      expect((yield* push(plain, snapshot(1, []))).status).toBe(404)
      const { gateway } = yield* directoryGateway()
      const get = yield* Effect.promise(() => fetch(`${gateway.baseUrl}/sso/directory`))
      expect(get.status).toBe(405)
      expect(get.headers.get("allow")).toBe("PUT")
    })
  )

  it.scoped("with no identity provider to apply it to, a snapshot is 409 no_identity_provider", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway({
        env: { DIRECTORY_TOKEN },
        auth: () => ({ sso: { directory_token_env: "DIRECTORY_TOKEN" } })
      })
      const answer = yield* push(gateway, snapshot(1, []))
      expect(answer.status).toBe(409)
      expect(answer.body["error"]).toBe("no_identity_provider")
    })
  )
})

describe("PUT /sso/directory without ?provider", () => {
  it.scoped("is refused (409 provider_required) when earlier snapshots went to another connection's namespace", () =>
    Effect.gen(function* () {
      const { gateway } = yield* directoryGateway()
      // Earlier snapshots were applied under settings whose namespace is not today's.
      yield* inGateway(gateway)(
        Effect.gen(function* () {
          yield* (yield* DirectoryRepo).recordVersion("oidc:earlier-namespace", 7, {}, new Date(0))
        })
      )
      const refused = yield* push(gateway, snapshot(1, [["alice", true]]))
      expect([refused.status, refused.body["error"]]).toEqual([409, "provider_required"])
      expect((yield* push(gateway, snapshot(1, [["alice", true]]), DIRECTORY_TOKEN, "?provider=oidc")).status).toBe(200)
      // From then on this connection has snapshots: the default works again.
      expect((yield* push(gateway, snapshot(2, [["alice", true]]))).status).toBe(200)
      expect((yield* push(gateway, snapshot(3, []), DIRECTORY_TOKEN, "?provider=ldap")).body["error"]).toBe(
        "no_identity_provider"
      )
    })
  )
})
