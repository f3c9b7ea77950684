/**
 * The Management API's `identities*` endpoints (docs/management-api.md: users and groups, the
 * permission object, errors such as `group_permissions_required`, revisions and `If-Match`). The admin listener
 * answers with a token obtained through /sso by the administrator, on SQLite and on PostgreSQL.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option, TestClock } from "effect"
import { AuditEventRepo } from "../../src/store/audit-events.js"
import { UserRepo } from "../../src/store/users.js"
import { addLocalUser, adminToken, ifMatch, managementApi, signInForAdminToken } from "../support/admin-api.js"
import { storeKinds } from "../support/databases.js"
import { grantAccess, grantAccessTo } from "../support/grants.js"
import { Browser, exchange, obtainCode } from "../support/oauth-client.js"
import { inGateway, oauthGateway } from "../support/oauth-gateway.js"

const setup = (kind: (typeof storeKinds)[number]) =>
  Effect.gen(function* () {
    const gateway = yield* oauthGateway({ kind })
    const totp: { secret?: Uint8Array } = {}
    const token = yield* adminToken(gateway, totp)
    return { gateway, totp, token, api: managementApi(gateway, token) }
  })

const records = (body: Record<string, unknown>, key: "users" | "groups") =>
  body[key] as ReadonlyArray<Record<string, unknown>>

const validGroup = {
  name: "CRM readers",
  permissions: {
    scopes: ["crm:read"],
    access: [
      {
        endpoint_id: "crm",
        tools: ["search", "update_account"],
        allow_write_requests: true,
        resource_rules: [{ argument: "/account/region", allowed_values: ["emea"] }]
      }
    ]
  }
}

describe.each(storeKinds)("Management API: identities (%s)", (kind) => {
  it.scoped("refuses requests without an administrator's token: none 401, a non-administrator's 403", () =>
    Effect.gen(function* () {
      const { gateway, totp: adminTotp, token: adminAccess } = yield* setup(kind)
      const anonymous = yield* managementApi(gateway).get("/api/v1/identities")
      expect(anonymous.status).toBe(401)
      expect(anonymous.headers.get("www-authenticate")).toContain("Bearer")
      expect(anonymous.body).toMatchObject({ error: "unauthorized", request_id: expect.any(String) })
      const forged = yield* managementApi(gateway, "not-a-token").get("/api/v1/identities")
      expect(forged).toMatchObject({ status: 401, body: { error: "invalid_token" } })
      // The header is read as /mcp reads it: `Bearer`, spaces, the token. The administrator's own token
      // behind any other seven characters is refused, where cutting seven characters off had let it pass.
      const api = managementApi(gateway)
      for (const spelling of [`Bearer\t${adminAccess}`, `Basic  ${adminAccess}`, `xxxxxxx${adminAccess}`]) {
        const answer = yield* api.get("/api/v1/identities", { authorization: spelling })
        expect(answer, JSON.stringify(spelling.slice(0, 7))).toMatchObject({
          status: 401,
          body: { error: "invalid_token", error_description: "The Authorization header is not a bearer token." }
        })
      }
      const lowerCase = yield* api.get("/api/v1/identities", { authorization: `bearer  ${adminAccess}` })
      expect(lowerCase.status).toBe(200)

      // Alice holds no administrative scope: her token for the API carries none and is refused.
      const password = "alice's long passphrase"
      const alice = yield* addLocalUser(gateway, "alice", password)
      const totp: { secret?: Uint8Array } = {}
      const first = yield* signInForAdminToken(gateway, "alice", password, totp)
      expect(first["scope"]).toBe("")
      const refused = yield* managementApi(gateway, String(first["access_token"])).get("/api/v1/identities")
      expect(refused).toMatchObject({ status: 403, body: { error: "insufficient_scope" } })
      // Made an administrator (admin role of a permission group), she needs a new token: added scopes
      // are not in tokens issued before (docs/access-policy.md, "Rules").
      yield* inGateway(gateway)(grantAccessTo(alice, [], { roles: ["admin"] }))
      expect((yield* managementApi(gateway, String(first["access_token"])).get("/api/v1/identities")).status).toBe(403)
      yield* TestClock.adjust("31 seconds")
      const second = yield* signInForAdminToken(gateway, "alice", password, totp, 31_000)
      expect(second["scope"]).toBe("gateway:admin")
      const admitted = yield* managementApi(gateway, String(second["access_token"])).get("/api/v1/identities")
      expect(admitted.status).toBe(200)
      // A token for /mcp is not one for the Management API (another audience), nor the reverse.
      yield* TestClock.adjust("31 seconds")
      const mcp = yield* Effect.promise(async () => {
        const obtained = await obtainCode(new Browser(gateway.baseUrl), {
          scope: "gateway:admin",
          totp: adminTotp,
          nowMs: 62_000
        })
        return (await exchange(gateway.baseUrl, obtained)).body
      })
      const wrongAudience = yield* managementApi(gateway, String(mcp["access_token"])).get("/api/v1/identities")
      expect(wrongAudience).toMatchObject({ status: 401, body: { error: "invalid_token" } })
    })
  )

  it.scoped("lists users with their memberships and every group, the built-in Administrators included", () =>
    Effect.gen(function* () {
      const { api } = yield* setup(kind)
      const listed = yield* api.get("/api/v1/identities")
      expect(listed.status).toBe(200)
      const admin = records(listed.body, "users").find((user) => user["kind"] === "builtin_admin")
      expect(admin).toMatchObject({
        type: "user",
        username: "admin",
        status: "enabled",
        enabled: true,
        directory_active: true,
        groups: [{ id: "administrators", name: "Administrators", source: "direct" }],
        revision: expect.stringMatching(/^[0-9]+$/)
      })
      expect(records(listed.body, "groups")).toContainEqual(
        expect.objectContaining({
          id: "administrators",
          provider: "gateway:permissions",
          kind: "permission",
          managed_locally: true,
          builtin: "administrators",
          permissions: { roles: ["admin"], scopes: [], access: [] },
          members: 1
        })
      )
    })
  )

  it.scoped(
    "pages users with limit and cursor; a bad or repeated limit or cursor, or a control character in the path or query, is a 400 in the API's own error body, naming it",
    () =>
      Effect.gen(function* () {
        const { api, gateway } = yield* setup(kind)
        // Three users: the administrator and two local accounts.
        for (const name of ["pat", "sam"]) yield* addLocalUser(gateway, name, "correct horse battery staple")
        const everyone = records((yield* api.get("/api/v1/identities")).body, "users").map((user) => user["id"])
        expect(everyone).toHaveLength(3)
        const first = yield* api.get("/api/v1/identities?limit=1")
        expect(records(first.body, "users").map((user) => user["id"])).toEqual(everyone.slice(0, 1))
        const next = yield* api.get(`/api/v1/identities?limit=1000&cursor=${String(first.body["next_cursor"])}`)
        expect(records(next.body, "users").map((user) => user["id"])).toEqual(everyone.slice(1))
        expect(next.body["next_cursor"]).toBeUndefined()
        for (const [query, message] of [
          ["limit=0", "limit: expected an integer from 1 to 1000"],
          ["limit=1001", "limit: expected an integer from 1 to 1000"],
          ["limit=-1", "limit: expected an integer from 1 to 1000"],
          ["limit=1.5", "limit: expected an integer from 1 to 1000"],
          ["limit=abc", "limit: expected an integer from 1 to 1000"],
          ["limit=99999999999999999999", "limit: expected an integer from 1 to 1000"],
          ["limit=1&limit=2", "limit: give it once"],
          ["cursor=a&cursor=b", "cursor: give it once"],
          // U+0000 would reach PostgreSQL as a 500; no control character is an id, cursor or name.
          ["cursor=%00", "The request's path or query holds a control character."],
          ["cursor=a%0Ab", "The request's path or query holds a control character."],
          ["cursor=%ZZ", "The request's path or query is not valid percent-encoding."]
        ]) {
          const answer = yield* api.get(`/api/v1/identities?${query}`)
          expect({ query, status: answer.status, body: answer.body }).toEqual({
            query,
            status: 400,
            body: expect.objectContaining({ error: "invalid_request", error_description: message })
          })
        }
        const path = yield* api.put("/api/v1/identities/%00", { enabled: true }, { "if-match": '"1"' })
        expect(path).toMatchObject({
          status: 400,
          body: {
            error: "invalid_request",
            error_description: "The request's path or query holds a control character."
          }
        })
      })
  )

  it.scoped("creates a permission group (201) and records who did it in the audit trail", () =>
    Effect.gen(function* () {
      const { gateway, api } = yield* setup(kind)
      const created = yield* api.post("/api/v1/identities/groups", validGroup)
      expect(created.status).toBe(201)
      expect(created.body).toMatchObject({
        type: "group",
        name: "CRM readers",
        provider: "gateway:permissions",
        kind: "permission",
        managed_locally: true,
        enabled: true,
        revision: "1",
        permissions: {
          roles: [],
          scopes: ["crm:read"],
          access: [
            {
              endpoint_id: "crm",
              tools: ["search", "update_account"],
              allow_write_requests: true,
              resource_rules: [{ argument: "/account/region", allowed_values: ["emea"] }],
              prompts: [],
              read_resources: false,
              subscribe: false
            }
          ]
        }
      })
      const events = yield* inGateway(gateway)(
        Effect.flatMap(AuditEventRepo, (audit) => audit.forTarget(String(created.body["id"])))
      )
      const admin = Option.getOrThrow(
        yield* inGateway(gateway)(Effect.flatMap(UserRepo, (users) => users.findBuiltinAdmin))
      )
      expect(events).toHaveLength(1)
      expect(events[0]).toMatchObject({ action: "identity.group_created", actor_id: admin.id, target_kind: "group" })
      expect(JSON.parse(events[0]!.detail)).toMatchObject({ name: "CRM readers", source_groups: [] })
      const again = yield* api.post("/api/v1/identities/groups", { name: "CRM readers" })
      expect(again).toMatchObject({ status: 409, body: { error: "name_taken" } })
    })
  )

  it.scoped("answers every malformed body with a precise 400, 413 or 415 and writes nothing", () =>
    Effect.gen(function* () {
      const { api } = yield* setup(kind)
      const cases: ReadonlyArray<readonly [unknown, number, string]> = [
        ["{not json", 400, "The body is not valid JSON."],
        [JSON.stringify([1, 2]), 400, "The body must be a JSON object."],
        [{ name: "x", colour: "red" }, 400, 'colour: unknown key "colour"'],
        [{ name: 7 }, 400, "name: expected a string, got 7"],
        [{ name: "" }, 400, "name: must not be empty"],
        [{ name: "x".repeat(201) }, 400, "name: must be at most 200 characters"],
        [{ name: "a\u0007b" }, 400, "name: must not contain control characters"],
        [{ name: "a\r\nX-Injected: 1" }, 400, "name: must not contain control characters"],
        // PostgreSQL cannot store U+0000 in text: refused at the body, in any field, on both stores.
        [{ name: "a\u0000b" }, 400, "The body holds a NUL character (\\u0000), which no field accepts."],
        [{ name: "x", source_groups: ["g\u0000"] }, 400, "The body holds a NUL character"],
        [{ name: "x", provider: "okta" }, 400, 'provider: expected "gateway:permissions"'],
        [{ name: "x", permissions: { roles: ["root"] } }, 400, "permissions.roles[0]"],
        [
          { name: "x", permissions: { access: [{ endpoint_id: "crm", tools: "search" }] } },
          400,
          "permissions.access[0].tools: expected a list"
        ],
        [
          {
            name: "x",
            permissions: {
              access: [
                { endpoint_id: "crm", tools: [], resource_rules: [{ argument: "region", allowed_values: ["a"] }] }
              ]
            }
          },
          400,
          'permissions.access[0].resource_rules[0].argument: expected a JSON Pointer such as "/account/id"'
        ],
        [
          {
            name: "x",
            permissions: { access: [{ endpoint_id: "crm", tools: Array.from({ length: 1025 }, (_, i) => `t${i}`) }] }
          },
          400,
          "permissions.access[0].tools: must have at most 1024 items"
        ],
        [{ name: "x", permissions: { scopes: ["has space"] } }, 400, "permissions.scopes[0]: expected a scope name"],
        [{ name: "x", __proto__: { admin: true }, enabled: "yes" }, 400, "enabled: expected true or false"],
        [{ name: "x", source_groups: ["no-such-group"] }, 400, 'source_groups[0]: no group "no-such-group"'],
        // Administrative scopes come only through roles (the last-administrator rule counts role holders).
        [
          { name: "x", permissions: { scopes: ["crm:read", "gateway:admin"] } },
          400,
          'permissions.scopes[1]: "gateway:admin" is an administrative scope; grant it through permissions.roles'
        ]
      ]
      for (const [body, status, message] of cases) {
        const answer = yield* api.post("/api/v1/identities/groups", body)
        expect({ body, status: answer.status, error: answer.body["error"] }).toEqual({
          body,
          status,
          error: "invalid_request"
        })
        expect(String(answer.body["error_description"])).toContain(message)
      }
      const huge = yield* api.post("/api/v1/identities/groups", { name: "x".repeat(1024 * 1024) })
      expect(huge).toMatchObject({ status: 413, body: { error: "payload_too_large" } })
      const form = yield* api.post("/api/v1/identities/groups", "name=x", {
        "content-type": "application/x-www-form-urlencoded"
      })
      expect(form).toMatchObject({ status: 415, body: { error: "unsupported_media_type" } })
      // Bytes that are not UTF-8 are refused, not stored as U+FFFD; nor is a body in another charset misread.
      const latin1 = yield* api.post("/api/v1/identities/groups", Buffer.from('{"name":"bad \xff\xfe utf8"}', "latin1"))
      expect(latin1).toMatchObject({
        status: 400,
        body: { error: "invalid_request", error_description: "The request body is not valid UTF-8." }
      })
      const utf16 = yield* api.post("/api/v1/identities/groups", JSON.stringify({ name: "x" }), {
        "content-type": 'application/json; charset="UTF-16"'
      })
      expect(utf16).toMatchObject({
        status: 415,
        body: {
          error: "unsupported_media_type",
          error_description:
            "Send the body as application/json in UTF-8: the body is read as UTF-8 only (charset=utf-16 given)."
        }
      })
      // UTF-8 named as such passes on to the body's own checks.
      const utf8 = yield* api.post("/api/v1/identities/groups", JSON.stringify({ name: "" }), {
        "content-type": "application/json; charset=UTF-8"
      })
      expect(utf8).toMatchObject({ status: 400, body: { error_description: 'name: must not be empty, got ""' } })
      // A served path with another method: 405 naming the methods, not "No such path".
      const wrongMethod = yield* api.send("DELETE", "/api/v1/identities/groups")
      expect(wrongMethod).toMatchObject({
        status: 405,
        body: { error: "method_not_allowed", error_description: "DELETE is not answered on this path; use POST." }
      })
      expect(wrongMethod.headers.get("allow")).toBe("POST")
      expect((yield* api.send("DELETE", "/api/v1/identities")).headers.get("allow")).toBe("GET, HEAD")
      expect((yield* api.send("DELETE", "/api/v1/nothing-here")).status).toBe(404)
      const groups = records((yield* api.get("/api/v1/identities")).body, "groups")
      expect(groups.map((group) => group["id"])).toEqual(["administrators"])
    })
  )

  it.scoped(
    "PUT /identities/{id}: If-Match required (428) and current (412); groups set; permissions refused on users",
    () =>
      Effect.gen(function* () {
        const { gateway, api } = yield* setup(kind)
        const { userId } = yield* inGateway(gateway)(grantAccess([{ endpoint_id: "crm", tools: ["search"] }]))
        const group = (yield* api.post("/api/v1/identities/groups", validGroup)).body
        const user = () =>
          Effect.map(
            api.get("/api/v1/identities"),
            (listed) => records(listed.body, "users").find((each) => each["id"] === userId)!
          )
        const before = yield* user()
        const path = `/api/v1/identities/${userId}`

        const unconditional = yield* api.put(path, { enabled: true, groups: [] })
        expect(unconditional).toMatchObject({ status: 428, body: { error: "precondition_required" } })
        const garbled = yield* api.put(path, { enabled: true }, { "if-match": "latest" })
        expect(garbled).toMatchObject({ status: 400, body: { error: "invalid_request" } })
        const stale = yield* api.put(path, { enabled: true }, { "if-match": '"999"' })
        expect(stale).toMatchObject({ status: 412, body: { error: "precondition_failed" } })
        expect(String(stale.body["error_description"])).toContain(`"${before["revision"]}"`)

        const withPermissions = yield* api.put(
          path,
          { enabled: true, permissions: { scopes: ["crm:read"] } },
          ifMatch(before)
        )
        expect(withPermissions).toMatchObject({ status: 400, body: { error: "group_permissions_required" } })
        const unknownGroup = yield* api.put(path, { enabled: true, groups: ["nope"] }, ifMatch(before))
        expect(unknownGroup).toMatchObject({ status: 400, body: { error_description: 'groups[0]: no group "nope"' } })
        const twice = yield* api.put(path, { enabled: true, groups: [group["id"], group["id"]] }, ifMatch(before))
        expect(twice.status).toBe(400)

        // `groups` omitted keeps the memberships; a complete list replaces the direct ones.
        const kept = yield* api.put(path, { enabled: true }, ifMatch(before))
        expect(kept.status).toBe(200)
        expect((kept.body["groups"] as ReadonlyArray<unknown>).length).toBe(1)
        const replaced = yield* api.put(path, { enabled: true, groups: [group["id"]] }, ifMatch(kept.body))
        expect(replaced.status).toBe(200)
        expect(replaced.body["groups"]).toEqual([{ id: group["id"], name: "CRM readers", source: "direct" }])
        expect(Number(replaced.body["revision"])).toBe(Number(before["revision"]) + 2)
        // The revision it replaced is gone: writing with it again is refused.
        expect((yield* api.put(path, { enabled: false }, ifMatch(kept.body))).status).toBe(412)
        const disabled = yield* api.put(path, { enabled: false }, ifMatch(replaced.body))
        expect(disabled.body).toMatchObject({ status: "disabled", enabled: false })
        const missing = yield* api.put("/api/v1/identities/no-such-id", { enabled: true }, { "if-match": '"1"' })
        expect(missing).toMatchObject({ status: 404, body: { error: "not_found" } })
      })
  )

  it.scoped("a group's enabled flag and permissions change through either path; groups do not nest", () =>
    Effect.gen(function* () {
      const { api } = yield* setup(kind)
      const group = (yield* api.post("/api/v1/identities/groups", validGroup)).body
      const viaIdentity = yield* api.put(
        `/api/v1/identities/${group["id"]}`,
        { enabled: false, permissions: { scopes: [], access: [] } },
        ifMatch(group)
      )
      expect(viaIdentity.body).toMatchObject({ enabled: false, permissions: { scopes: [], access: [] }, revision: "2" })
      const nested = yield* api.put(
        `/api/v1/identities/groups/${group["id"]}`,
        { groups: ["administrators"] },
        ifMatch(viaIdentity.body)
      )
      expect(nested).toMatchObject({ status: 400, body: { error: "invalid_request" } })
      const renamed = yield* api.put(
        `/api/v1/identities/groups/${group["id"]}`,
        { name: "CRM (all)", enabled: true },
        ifMatch(viaIdentity.body)
      )
      expect(renamed.body).toMatchObject({
        name: "CRM (all)",
        enabled: true,
        revision: "3",
        permissions: { access: [] }
      })
      const builtin = (yield* api.get("/api/v1/identities")).body
      const administrators = records(builtin, "groups").find((each) => each["id"] === "administrators")!
      const widened = yield* api.put(
        "/api/v1/identities/groups/administrators",
        { permissions: { roles: ["admin"], access: [{ endpoint_id: "crm", tools: ["search"] }] } },
        ifMatch(administrators)
      )
      expect(widened).toMatchObject({ status: 400, body: { error: "builtin_group" } })
    })
  )
})
