/**
 * The Management API's OpenAPI document is generated from its HttpApi definition: the gateway serves
 * it at /api/v1/openapi.json, and the committed docs/api/openapi.json is that document (regenerate with
 * `npm run openapi`), so the documentation cannot drift from the code.
 */
import { readFileSync } from "node:fs"
import { resolve } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { openApiDocument } from "../../src/admin/openapi.js"
import { oauthGateway } from "../support/oauth-gateway.js"

const committed = JSON.parse(readFileSync(resolve(import.meta.dirname, "../../docs/api/openapi.json"), "utf8"))

describe("the Management API's OpenAPI document", () => {
  it("docs/api/openapi.json is the document generated from the code (npm run openapi)", () => {
    expect(committed).toEqual(JSON.parse(JSON.stringify(openApiDocument())))
  })

  it("names every endpoint, the bearer security and the error statuses", () => {
    const paths = Object.keys(committed.paths).sort()
    expect(paths).toEqual([
      "/api/v1/approvals/delivery",
      "/api/v1/audit-events",
      "/api/v1/backends",
      "/api/v1/backends/{id}",
      "/api/v1/directory",
      "/api/v1/directory/{connection}/reset-version",
      "/api/v1/http-tools",
      "/api/v1/http-tools/{id}",
      "/api/v1/identities",
      "/api/v1/identities/groups",
      "/api/v1/identities/groups/{id}",
      "/api/v1/identities/{id}",
      "/api/v1/identities/{id}/effective-access",
      "/api/v1/identity-providers",
      "/api/v1/identity-providers/probe",
      "/api/v1/identity-providers/test",
      "/api/v1/identity-providers/tests/{id}",
      "/api/v1/local-accounts",
      "/api/v1/local-accounts/{id}",
      "/api/v1/local-accounts/{id}/disable",
      "/api/v1/local-accounts/{id}/enable",
      "/api/v1/local-accounts/{id}/reset-mfa",
      "/api/v1/local-accounts/{id}/reset-password",
      "/api/v1/openapi-imports",
      "/api/v1/openapi-imports/{id}",
      "/api/v1/proposals",
      "/api/v1/proposals/{id}",
      "/api/v1/status",
      "/api/v1/tool-groups",
      "/api/v1/tool-groups/{id}",
      "/api/v1/tool-sources/initialize"
    ])
    const update = committed.paths["/api/v1/identities/{id}"].put
    expect(update.security).toEqual([{ bearer: [] }])
    expect(Object.keys(update.responses).sort()).toEqual([
      "200",
      "400",
      "401",
      "403",
      "404",
      "409",
      "412",
      "413",
      "415",
      "428"
    ])
  })

  it("documents the tool sources' answers: 201 or 202 on create, 204 on delete, If-Match statuses", () => {
    const backends = committed.paths["/api/v1/backends"]
    expect(Object.keys(backends.post.responses).sort()).toEqual([
      "201",
      "202",
      "400",
      "401",
      "403",
      "409",
      "413",
      "415"
    ])
    const one = committed.paths["/api/v1/backends/{id}"]
    expect(Object.keys(one.delete.responses).sort()).toEqual(["204", "400", "401", "403", "404", "409", "412", "428"])
  })

  it("documents the local accounts' answers: 201 with the link on create, If-Match statuses on actions", () => {
    const create = committed.paths["/api/v1/local-accounts"].post
    expect(Object.keys(create.responses).sort()).toEqual(["201", "400", "401", "403", "409", "413", "415"])
    const reset = committed.paths["/api/v1/local-accounts/{id}/reset-password"].post
    expect(Object.keys(reset.responses).sort()).toEqual([
      "200",
      "400",
      "401",
      "403",
      "404",
      "409",
      "412",
      "413",
      "415",
      "428"
    ])
  })

  it.scoped("is served by the admin listener", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway()
      const served = yield* Effect.promise(() => fetch(`${gateway.adminUrl}/api/v1/openapi.json`).then((r) => r.json()))
      expect(served).toEqual(committed)
    })
  )
})
