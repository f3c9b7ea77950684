/**
 * docs/access-policy.md, "Rules" (the next request sees the change; running work is cancelled) at the
 * edges a change can slip past: a request whose body arrives after the change, a change written by
 * another process next to one of this process, two grants whose tool names would join to the same
 * text, an open `subscriptions/listen` stream, and administrative scopes outside roles.
 */
import { request as httpRequest } from "node:http"
import { SqlClient } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { AccessState } from "../../src/policy/access-state.js"
import { Permissions } from "../../src/policy/permissions.js"
import { PolicyWrites } from "../../src/policy/writes.js"
import { GroupRepo } from "../../src/store/groups.js"
import { UserRepo } from "../../src/store/users.js"
import { type AccessInput, grantAccess, testActor } from "../support/grants.js"
import { alphaTools, startBackend, type TestBackend } from "../support/mcp-backends.js"
import { jsonRpcOf, rawPost } from "../support/mcp-clients.js"
import { startTestGateway, type TestGateway } from "../support/mcp-gateway.js"

let alpha: TestBackend
let gateway: TestGateway
beforeAll(async () => {
  alpha = await startBackend("alpha", alphaTools)
  gateway = await startTestGateway({
    policy: "store",
    patch: {
      backends: [
        { id: "alpha", url: alpha.url, allow_insecure_http: true, required: true, tool_rules: [{ tools: ["*"] }] }
      ]
    }
  })
})
afterAll(async () => {
  await gateway?.close()
  await alpha?.stop()
})

const userWith = async (access: ReadonlyArray<AccessInput>) => {
  const { userId, groupId } = await gateway.run(grantAccess(access))
  return { userId, groupId, token: await gateway.token({ subject: userId, scopes: [] }) }
}

const changeGroup = (groupId: string, permissions: unknown) =>
  gateway.run(
    Effect.gen(function* () {
      const group = yield* (yield* GroupRepo).find(groupId)
      yield* (yield* PolicyWrites).updateGroup(testActor, groupId, group!.revision, {
        permissions: Schema.decodeUnknownSync(Permissions)(permissions)
      })
    })
  )

const disable = (userId: string) =>
  gateway.run(
    Effect.gen(function* () {
      const user = Option.getOrThrow(yield* (yield* UserRepo).findById(userId))
      yield* (yield* PolicyWrites).updateUser(testActor, userId, user.revision, { enabled: false })
    })
  )

const legacy = { "mcp-protocol-version": "2025-11-25" }
const echoBody = (message: string) =>
  JSON.stringify({
    jsonrpc: "2.0",
    id: 1,
    method: "tools/call",
    params: { name: "alpha__echo", arguments: { message } }
  })
const call = (token: string, message: string) =>
  rawPost(gateway.mcpUrl, echoBody(message), { ...legacy, authorization: `Bearer ${token}` }).then(jsonRpcOf)
const list = (token: string) =>
  rawPost(gateway.mcpUrl, JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list", params: {} }), {
    ...legacy,
    authorization: `Bearer ${token}`
  })
    .then(jsonRpcOf)
    .then((message) => (message["result"] as { tools: Array<{ name: string }> }).tools.map((tool) => tool.name))
const reached = (text: string) => alpha.requests.filter((request) => request.body.includes(text)).length

describe("a policy change reaches every request", () => {
  it("a request whose body arrives after access was withdrawn is decided with the new access", async () => {
    const { token, groupId } = await userWith([{ endpoint_id: "alpha", tools: ["echo"] }])
    expect(await call(token, "warm")).toHaveProperty("result")
    // The headers go out (and pass), the body is held back while the permission is removed.
    const url = new URL(gateway.mcpUrl)
    const body = echoBody("held-body")
    const request = httpRequest({
      host: url.hostname,
      port: url.port,
      path: url.pathname,
      method: "POST",
      headers: {
        ...legacy,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        authorization: `Bearer ${token}`,
        "content-length": Buffer.byteLength(body)
      }
    })
    const answered = new Promise<string>((resolve, reject) => {
      request.on("error", reject)
      request.on("response", (response) => {
        let text = ""
        response.on("data", (chunk) => (text += chunk))
        response.on("end", () => resolve(text))
      })
    })
    request.flushHeaders()
    // Time for the gateway to take the headers and run its first check (nothing outside can observe
    // it; were it late, the check would already see the change and the test would prove less, not fail).
    await new Promise((done) => setTimeout(done, 200))
    await changeGroup(groupId, { access: [] })
    request.end(body)
    const message = JSON.parse(await answered) as { error?: { code: number; message: string } }
    expect(message.error).toMatchObject({ code: -32602, message: expect.stringContaining("Unknown tool") })
    expect(reached("held-body")).toBe(0)
  })

  it("a disabled user's held request is refused 401 once its body arrives", async () => {
    const { token, userId } = await userWith([{ endpoint_id: "alpha", tools: ["echo"] }])
    expect(await call(token, "warm")).toHaveProperty("result")
    const url = new URL(gateway.mcpUrl)
    const body = echoBody("held-after-disable")
    const request = httpRequest({
      host: url.hostname,
      port: url.port,
      path: url.pathname,
      method: "POST",
      headers: {
        ...legacy,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        authorization: `Bearer ${token}`,
        "content-length": Buffer.byteLength(body)
      }
    })
    const status = new Promise<number>((resolve, reject) => {
      request.on("error", reject)
      request.on("response", (response) => {
        response.resume()
        resolve(response.statusCode ?? 0)
      })
    })
    request.flushHeaders()
    await new Promise((done) => setTimeout(done, 200))
    await disable(userId)
    request.end(body)
    expect(await status).toBe(401)
    expect(reached("held-after-disable")).toBe(0)
  })

  it("a change another process wrote is not lost when this process writes next", async () => {
    const bystander = await userWith([])
    const { token, userId, groupId } = await userWith([{ endpoint_id: "alpha", tools: ["echo"] }])
    expect(await call(token, "before-foreign")).toHaveProperty("result")
    // Another process (a second replica, `gateway init-admin`) removes the membership and bumps the
    // version; this process then writes before its poll has noticed.
    await gateway.run(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        yield* sql.withTransaction(
          Effect.gen(function* () {
            yield* sql`UPDATE policy_version SET version = version + 1 WHERE id = 1`
            yield* sql`DELETE FROM memberships WHERE user_id = ${userId} AND group_id = ${groupId}`
          })
        )
      }).pipe(Effect.orDie)
    )
    const epoch = await gateway.run(Effect.map(AccessState, (state) => state.epoch()))
    await disable(bystander.userId)
    expect(await gateway.run(Effect.map(AccessState, (state) => state.epoch()))).toBe(epoch + 1)
    // At once, without waiting for the poll: the gap in versions made this process reload everything.
    const after = await call(token, "after-foreign")
    expect(after["error"]).toMatchObject({ code: -32602 })
    expect(reached("after-foreign")).toBe(0)
  })

  it("two grants whose tool names would join to the same text never share a tools/list page", async () => {
    const both = await userWith([{ endpoint_id: "alpha", tools: ["echo", "search"] }])
    const comma = await userWith([{ endpoint_id: "alpha", tools: ["echo,search"] }])
    expect(await list(both.token)).toEqual(["alpha__echo", "alpha__search"])
    expect(await list(comma.token)).toEqual([])
  })

  it("a subscriptions/listen stream ends when its caller loses the subscribe permission", async () => {
    const { token, groupId } = await userWith([{ endpoint_id: "alpha", tools: ["echo"], subscribe: true }])
    const response = await rawPost(
      gateway.mcpUrl,
      JSON.stringify({
        jsonrpc: "2.0",
        id: 3,
        method: "subscriptions/listen",
        params: {
          notifications: { toolsListChanged: true },
          _meta: {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}
          }
        }
      }),
      {
        authorization: `Bearer ${token}`,
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "subscriptions/listen"
      }
    )
    expect(response.headers.get("content-type")).toContain("text/event-stream")
    const reader = response.body!.getReader()
    const ended = (async () => {
      for (;;) {
        const next = await reader.read().catch(() => ({ done: true as const }))
        if (next.done) return true
      }
    })()
    await changeGroup(groupId, { access: [{ endpoint_id: "alpha", tools: ["echo"] }] })
    expect(await ended).toBe(true)
  })

  it("administrative scopes come only from roles: a stored plain scope grants nothing", async () => {
    const { userId, groupId } = await userWith([])
    // A hand-edited row (the Management API refuses it): `gateway:admin` among a group's plain scopes.
    await gateway.run(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const permissions = JSON.stringify({ roles: [], scopes: ["gateway:admin", "crm:read"], access: [] })
        yield* sql`UPDATE groups SET permissions = ${permissions} WHERE id = ${groupId}`
        yield* (yield* AccessState).changed({})
      }).pipe(Effect.orDie)
    )
    const grant = await gateway.run(Effect.flatMap(AccessState, (state) => state.grantOfUser(userId)))
    expect([...(grant?.scopes ?? [])]).toEqual(["crm:read"])
  })
})
