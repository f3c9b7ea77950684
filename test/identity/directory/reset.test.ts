/**
 * docs/directory.md, "Resetting a provider's version", on both stores: a push of 2^53 - 1 is accepted
 * and then every later push is `409 stale_version`; an administrator lowers the version through the
 * Management API (`POST /api/v1/directory/{connection}/reset-version`, If-Match: the version read),
 * audited and logged, without changing anybody's access, and the adapter's next push applies again.
 * And what a push refuses as a version, each with a precise 400.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { DirectoryRepo } from "../../../src/store/directory.js"
import { adminToken, managementApi } from "../../support/admin-api.js"
import { storeKinds } from "../../support/databases.js"
import { directoryGateway, push, snapshot } from "../../support/directory.js"
import { inGateway } from "../../support/oauth-gateway.js"

const MAX = Number.MAX_SAFE_INTEGER
const reset = "/api/v1/directory/oidc/reset-version"

describe.each(storeKinds)("resetting a directory version (%s)", (kind) => {
  it.scoped(
    "a push of 2^53 - 1 locks out every later push; a reset at that version (If-Match) lowers it to 0, audited and logged, access unchanged, and the next push applies",
    () =>
      Effect.gen(function* () {
        const { gateway, logs, provider } = yield* directoryGateway({ kind })
        const api = managementApi(gateway, yield* adminToken(gateway))
        expect((yield* api.get("/api/v1/directory")).body).toEqual({
          connections: [{ connection: "oidc", provider, version: null, revision: "0", applied_at: null }]
        })
        // Nothing to reset before the first snapshot.
        const early = yield* api.post(reset, {}, { "if-match": '"0"' })
        expect([early.status, early.body["error"]]).toEqual([404, "not_found"])

        // An adapter sending a timestamp in nanoseconds (capped) instead of seconds.
        expect((yield* push(gateway, snapshot(MAX, [["alice", true, ["eng"]]]))).status).toBe(200)
        const locked = yield* push(gateway, snapshot(1_764_000_000, [["alice", true, ["eng"]]]))
        expect([locked.status, locked.body["error"]]).toEqual([409, "stale_version"])
        const read = yield* api.get("/api/v1/directory")
        expect(read.body).toEqual({
          connections: [
            { connection: "oidc", provider, version: MAX, revision: String(MAX), applied_at: expect.any(String) }
          ]
        })
        const people = () => inGateway(gateway)(Effect.flatMap(DirectoryRepo, (repo) => repo.users(provider)))
        const before = yield* people()

        // Refused, precisely, and nothing changes.
        const refusals: ReadonlyArray<readonly [unknown, Record<string, string>, number, string]> = [
          [{}, {}, 428, "precondition_required"],
          [{}, { "if-match": '"1764000000"' }, 412, "precondition_failed"],
          [{}, { "if-match": "latest" }, 400, "invalid_request"],
          [{ version: MAX }, { "if-match": `"${MAX}"` }, 400, "invalid_request"],
          [{ version: -1 }, { "if-match": `"${MAX}"` }, 400, "invalid_request"],
          [{ version: 1.5 }, { "if-match": `"${MAX}"` }, 400, "invalid_request"],
          [{ version: "0" }, { "if-match": `"${MAX}"` }, 400, "invalid_request"],
          [{ version: 0, force: true }, { "if-match": `"${MAX}"` }, 400, "invalid_request"]
        ]
        for (const [body, headers, status, error] of refusals) {
          const answer = yield* api.post(reset, body, headers)
          expect([JSON.stringify(body), answer.status, answer.body["error"]]).toEqual([
            JSON.stringify(body),
            status,
            error
          ])
        }
        const notLower = yield* api.post(reset, { version: MAX }, { "if-match": `"${MAX}"` })
        expect(notLower.body["error_description"]).toContain(`is not lower than the current version ${MAX}`)
        for (const [path, message] of [
          ["/api/v1/directory/ldap/reset-version", "No ldap identity connection is configured."],
          ["/api/v1/directory/nope/reset-version", "No such identity connection"]
        ] as const) {
          const answer = yield* api.post(path, {}, { "if-match": `"${MAX}"` })
          expect([answer.status, answer.body["error"]]).toEqual([404, "not_found"])
          expect(answer.body["error_description"]).toContain(message)
        }
        expect((yield* api.get("/api/v1/directory")).body).toEqual(read.body)
        expect(logs.events("directory.version_reset")).toEqual([])

        const done = yield* api.post(reset, {}, { "if-match": `"${MAX}"` })
        expect(done.status).toBe(200)
        expect(done.body).toEqual({
          connection: "oidc",
          provider,
          version: 0,
          revision: "0",
          applied_at: (read.body["connections"] as Array<Record<string, unknown>>)[0]!["applied_at"]
        })
        expect(yield* people()).toEqual(before)
        const [line] = logs.events("directory.version_reset")
        expect(line).toMatchObject({ connection: "oidc", provider, from: MAX, to: 0, actor: expect.any(String) })
        const audit = yield* inGateway(gateway)(
          Effect.flatMap(
            SqlClient.SqlClient,
            (sql) =>
              sql`SELECT actor_id, target_kind, target_id, detail FROM audit_events WHERE action = 'directory.version_reset'`
          )
        )
        expect(audit).toHaveLength(1)
        expect(audit[0]).toMatchObject({ actor_id: line!["actor"], target_kind: "directory", target_id: provider })
        expect(JSON.parse(String(audit[0]!["detail"]))).toEqual({ connection: "oidc", provider, from: MAX, to: 0 })

        // The adapter's next push applies again (and a reset never raised anything).
        const next = yield* push(gateway, snapshot(1_764_000_000, [["alice", true, ["eng"], ["rd"]]]))
        expect([next.status, next.body["version"], next.body["memberships_added"]]).toEqual([200, 1_764_000_000, 1])
      }),
    60_000
  )

  it.scoped("two resets from the same read: exactly one lowers the version, the other gets 412", () =>
    Effect.gen(function* () {
      const { gateway, logs } = yield* directoryGateway({ kind })
      const api = managementApi(gateway, yield* adminToken(gateway))
      expect((yield* push(gateway, snapshot(50, [["alice", true]]))).status).toBe(200)
      const answers = yield* Effect.all(
        [10, 20, 30].map((version) => api.post(reset, { version }, { "if-match": '"50"' })),
        { concurrency: "unbounded" }
      )
      expect(answers.map((answer) => answer.status).sort()).toEqual([200, 412, 412])
      const winner = answers.find((answer) => answer.status === 200)!.body["version"]
      expect((yield* api.get("/api/v1/directory")).body["connections"]).toMatchObject([{ version: winner }])
      expect(logs.events("directory.version_reset")).toHaveLength(1)
      // The version the reset set is the one the next push must exceed.
      expect((yield* push(gateway, snapshot(Number(winner), [["alice", true]]))).status).toBe(409)
      expect((yield* push(gateway, snapshot(Number(winner) + 1, [["alice", true]]))).status).toBe(200)
    })
  )

  it.scoped("a push refuses every version that is not a positive integer up to 2^53 - 1, precisely", () =>
    Effect.gen(function* () {
      const { gateway, logs } = yield* directoryGateway({ kind })
      const rest = '"groups": [], "users": []'
      const expected = "version: expected a positive integer (at most 2^53 - 1 = 9007199254740991)"
      const cases: ReadonlyArray<readonly [string, string]> = [
        ["9007199254740992", "got 9007199254740992, which is larger"],
        ["12345678901234567890", "got 12345678901234567000, which is larger"],
        ["1e400", "got a number too large to read"],
        ["-1e400", "got a number too large to read"],
        ['"42"', "got a string"],
        ['"9007199254740991"', "got a string"],
        ["1.5", "got 1.5"],
        ["0", "got 0"],
        ["-0", "got 0"],
        ["-1", "got -1"],
        ["null", "got null"],
        ["true", "got a boolean"],
        ["[1]", "got an array"],
        ['{"$numberLong": "1"}', "got an object"]
      ]
      for (const [version, detail] of cases) {
        const answer = yield* push(gateway, `{"version": ${version}, ${rest}}`)
        expect([version, answer.status, answer.body["error"]]).toEqual([version, 400, "invalid_snapshot"])
        expect([version, answer.body["error_description"]]).toEqual([
          version,
          `The snapshot was rejected, nothing was applied: ${expected}, ${detail}`
        ])
      }
      const missing = yield* push(gateway, `{${rest}}`)
      expect(missing.body["error_description"]).toContain(`${expected}: missing`)
      expect(logs.events("directory.snapshot_applied")).toEqual([])
      expect((yield* push(gateway, `{"version": ${MAX}, ${rest}}`)).status).toBe(200)
    })
  )
})
