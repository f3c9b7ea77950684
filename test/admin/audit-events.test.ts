/**
 * docs/management-api.md, "Audit events" — `GET /api/v1/audit-events` and the console's audit page,
 * which call one function (src/admin/audit-events.ts), on a real in-process gateway on both stores:
 * newest first, filtered by actor and target exactly, paged by cursor without gaps or repeats (ties of
 * time broken by id), bad parameters refused naming the parameter, hostile text escaped on the page.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { auditSection } from "../../src/admin/console/pages/audit.js"
import type { ConsoleProblem } from "../../src/admin/console/route.js"
import { AuditEventRepo, type NewAuditEvent } from "../../src/store/audit-events.js"
import { adminToken, managementApi } from "../support/admin-api.js"
import { builtinAdmin, consoleRequest, runConsoleRoute } from "../support/console-request.js"
import { storeKinds } from "../support/databases.js"
import { inGateway, type OAuthGateway, oauthGateway } from "../support/oauth-gateway.js"

const HOSTILE = `<img src=x onerror="alert(1)">`
const route = auditSection.routes[0]!

const auditPage = (gateway: OAuthGateway, query: string) =>
  Effect.flatMap(builtinAdmin(gateway), (admin) =>
    runConsoleRoute(gateway, route, consoleRequest(admin, { query: new URLSearchParams(query) }))
  )

const textOf = (answer: unknown) => {
  const page = answer as { _tag: string; body?: { text: string } }
  if (page._tag !== "Page") throw new Error(`expected a page, got ${JSON.stringify(answer)}`)
  return page.body!.text
}

/** Seven events: two actors and the gateway itself, three targets, two pairs at the same millisecond. */
const seed = (gateway: OAuthGateway, adminId: string) =>
  inGateway(gateway)(
    Effect.gen(function* () {
      const repo = yield* AuditEventRepo
      const base = Date.parse("2026-03-01T10:00:00.000Z")
      const events: ReadonlyArray<Omit<NewAuditEvent, "requestId" | "detail">> = [
        { at: new Date(base), actorId: adminId, action: "user.enabled", targetKind: "user", targetId: "u-1" },
        {
          at: new Date(base + 1000),
          actorId: "u-other",
          action: "group.created",
          targetKind: "group",
          targetId: "g-1"
        },
        {
          at: new Date(base + 1000),
          actorId: adminId,
          action: "user.groups_changed",
          targetKind: "user",
          targetId: "u-1"
        },
        {
          at: new Date(base + 2000),
          actorId: undefined,
          action: "directory.applied",
          targetKind: "directory",
          targetId: "oidc"
        },
        {
          at: new Date(base + 3000),
          actorId: adminId,
          action: "source.created",
          targetKind: "backend",
          targetId: HOSTILE
        },
        {
          at: new Date(base + 3000),
          actorId: adminId,
          action: "source.updated",
          targetKind: "backend",
          targetId: "beta"
        },
        { at: new Date(base + 4000), actorId: "u-other", action: "user.disabled", targetKind: "user", targetId: "u-1" }
      ]
      const ids: Array<string> = []
      for (const event of events) {
        ids.push(yield* repo.insert({ ...event, detail: { note: `${event.action}` }, requestId: "req-1" }))
      }
      return events.map((event, index) => ({ ...event, id: ids[index]! }))
    })
  )

type Seeded = Effect.Effect.Success<ReturnType<typeof seed>>

/** The expected listing: newest first, ties by id descending. */
const expected = (events: Seeded, keep: (event: Seeded[number]) => boolean) =>
  events
    .filter(keep)
    .sort((a, b) => b.at.getTime() - a.at.getTime() || (a.id < b.id ? 1 : -1))
    .map((event) => event.id)

describe.each(storeKinds)("audit events (%s)", (kind) => {
  it.scopedLive("the API and the console page list an empty trail", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway({ kind })
      yield* inGateway(gateway)(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`DELETE FROM audit_events`))
      const api = managementApi(gateway, yield* adminToken(gateway, {}, Date.now()))
      const answer = yield* api.get("/api/v1/audit-events")
      expect(answer.status).toBe(200)
      expect(answer.body).toEqual({ items: [] })
      const page = textOf(yield* auditPage(gateway, ""))
      expect(page).toContain('id="no-events"')
      expect(page).toContain('<label for="actor">')
      expect(page).toContain('<label for="target">')
    })
  )

  it.scopedLive("filters by actor and target, pages by cursor without gaps or repeats, refuses bad parameters", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway({ kind })
      yield* inGateway(gateway)(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`DELETE FROM audit_events`))
      const admin = yield* builtinAdmin(gateway)
      const events = yield* seed(gateway, admin.userId)
      const api = managementApi(gateway, yield* adminToken(gateway, {}, Date.now()))

      /** Every page of `query` with `limit`, following next_cursor: the ids in order. */
      const walk = (query: string, limit: number) =>
        Effect.gen(function* () {
          const ids: Array<string> = []
          let cursor: string | undefined
          for (let pages = 0; pages < 20; pages++) {
            const params = new URLSearchParams(query)
            params.set("limit", String(limit))
            if (cursor !== undefined) params.set("cursor", cursor)
            const answer = yield* api.get(`/api/v1/audit-events?${params}`)
            expect(answer.status).toBe(200)
            const items = answer.body["items"] as Array<{ id: string }>
            expect(items.length).toBeLessThanOrEqual(limit)
            ids.push(...items.map((item) => item.id))
            cursor = answer.body["next_cursor"] as string | undefined
            if (cursor === undefined) return ids
          }
          throw new Error("no last page")
        })

      expect(yield* walk("", 2)).toEqual(expected(events, () => true))
      expect(yield* walk("", 7)).toEqual(expected(events, () => true))
      expect(yield* walk(`actor=${admin.userId}`, 2)).toEqual(
        expected(events, (event) => event.actorId === admin.userId)
      )
      expect(yield* walk("target=u-1", 1)).toEqual(expected(events, (event) => event.targetId === "u-1"))
      expect(yield* walk("actor=u-other&target=u-1", 5)).toEqual(
        expected(events, (event) => event.actorId === "u-other" && event.targetId === "u-1")
      )
      expect(yield* walk(`target=${encodeURIComponent(HOSTILE)}`, 5)).toHaveLength(1)
      expect(yield* walk("actor=nobody", 5)).toEqual([])

      const first = yield* api.get("/api/v1/audit-events?limit=1")
      expect(first.body["items"]).toEqual([
        {
          id: expect.any(String),
          at: "2026-03-01T10:00:04.000Z",
          actor: { id: "u-other", name: null },
          action: "user.disabled",
          target: { kind: "user", id: "u-1" },
          detail: { note: "user.disabled" },
          request_id: "req-1"
        }
      ])
      const mine = yield* api.get(`/api/v1/audit-events?limit=1&actor=${admin.userId}`)
      expect(mine.body["items"]).toMatchObject([{ actor: { id: admin.userId, name: expect.any(String) } }])
      const gatewayItself = yield* api.get("/api/v1/audit-events?target=oidc")
      expect(gatewayItself.body["items"]).toMatchObject([{ actor: null, action: "directory.applied" }])

      const refused: ReadonlyArray<[string, string]> = [
        ["limit=0", "limit:"],
        ["limit=201", "limit:"],
        ["limit=abc", "limit:"],
        ["limit=1&limit=2", "limit: give it once"],
        ["cursor=not-a-cursor!", "cursor:"],
        [`cursor=${Buffer.from("[1]").toString("base64url")}`, "cursor:"],
        ["actor=a&actor=b", "actor: give it once"],
        [`target=${"x".repeat(257)}`, "target:"]
      ]
      for (const [query, message] of refused) {
        const answer = yield* api.get(`/api/v1/audit-events?${query}`)
        expect(answer.status, query).toBe(400)
        expect(answer.body).toMatchObject({ error: "invalid_request" })
        expect(String(answer.body["error_description"])).toContain(message)
        const page = yield* auditPage(gateway, query)
        expect(page, query).toMatchObject({ _tag: "ConsoleProblem", status: 400 })
        expect((page as ConsoleProblem).message).toContain(message)
      }

      // The console page: the same listing, hostile ids escaped, filters kept in the next page's link.
      const page = textOf(yield* auditPage(gateway, ""))
      expect(page).not.toContain("<img")
      expect(page).toContain("&lt;img src=x onerror=&quot;alert(1)&quot;&gt;")
      const filtered = textOf(yield* auditPage(gateway, `actor=${admin.userId}&limit=2`))
      expect(filtered.match(/<tr><th scope="row">/g)).toHaveLength(2)
      expect(filtered).toContain(`value="${admin.userId}"`)
      const older = /<a id="older" href="([^"]+)">/.exec(filtered)
      expect(older).not.toBeNull()
      const next = new URL(older![1]!.replaceAll("&amp;", "&"), "http://console")
      expect(next.searchParams.get("actor")).toBe(admin.userId)
      expect(next.searchParams.get("limit")).toBe("2")
      const second = textOf(yield* auditPage(gateway, next.search.slice(1)))
      const apiSecond = yield* api.get(`/api/v1/audit-events${next.search}`)
      for (const item of apiSecond.body["items"] as Array<{ action: string }>) expect(second).toContain(item.action)
      expect(second).not.toContain("user.disabled")
    })
  )
})
