/**
 * docs/console.md, "Tool sources, approvals and audit" — the console's write approvals page, run in a
 * real in-process gateway on both stores: with no approval and with many (oldest first, paged by a
 * position without gaps or repeats, each linked to its review page on the public listener, hostile
 * tool names escaped, expired ones no longer open but recently finished), the delivery queues' status, bad positions refused.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { APPROVALS_PAGE, approvalsSection } from "../../../src/admin/console/pages/approvals.js"
import type { ConsoleProblem } from "../../../src/admin/console/route.js"
import { ApprovalRepo } from "../../../src/store/approvals.js"
import { builtinAdmin, consoleRequest, runConsoleRoute } from "../../support/console-request.js"
import { storeKinds } from "../../support/databases.js"
import { inGateway, type OAuthGateway, oauthGateway } from "../../support/oauth-gateway.js"

const HOSTILE = `<svg onload="alert(1)">`
const route = approvalsSection.routes[0]!

const approvalsPage = (gateway: OAuthGateway, query = "") =>
  Effect.flatMap(builtinAdmin(gateway), (admin) =>
    runConsoleRoute(gateway, route, consoleRequest(admin, { query: new URLSearchParams(query) }))
  )

const textOf = (answer: unknown) => {
  const page = answer as { _tag: string; body?: { text: string } }
  if (page._tag !== "Page") throw new Error(`expected a page, got ${JSON.stringify(answer)}`)
  return page.body!.text
}

const linkedIds = (text: string) => [...text.matchAll(/\/sso\/approvals\/(apr_[\w-]+)"/g)].map((match) => match[1]!)

/** The approvals linked from one table of the page (`approvals`: the open ones; `recent`). */
const tableIds = (text: string, id: string) => {
  const start = text.indexOf(`<table id="${id}">`)
  return start === -1 ? [] : linkedIds(text.slice(start, text.indexOf("</table>", start)))
}

describe.each(storeKinds)("console: write approvals (%s)", (kind) => {
  it.scopedLive("renders with no approval: the empty list and both delivery queues", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway({ kind })
      const text = textOf(yield* approvalsPage(gateway))
      expect(text).toContain('id="no-approvals"')
      expect(text).toMatch(/<th scope="row">Approval webhook<\/th><td>off<\/td><td>0<\/td><td>0<\/td>/)
      expect(text).toMatch(/<th scope="row">Audit archive<\/th><td>off<\/td>/)
      expect(text).toContain("<caption>Delivery queues</caption>")
    })
  )

  it.scopedLive("lists open approvals oldest first, a page at a time, each linked to its review page", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway({ kind })
      const now = Date.now()
      const admin = yield* builtinAdmin(gateway)
      const created = yield* inGateway(gateway)(
        Effect.gen(function* () {
          const repo = yield* ApprovalRepo
          const ids: Array<string> = []
          for (let index = 0; index < APPROVALS_PAGE + 3; index++) {
            const id = `apr_test${String(index).padStart(3, "0")}`
            const expired = index === 1
            yield* repo.create(
              {
                id,
                operationKey: undefined,
                issuer: gateway.issuer,
                subject: `person-${index}`,
                requesterId: index === 2 ? admin.userId : `user-${index}`,
                clientId: undefined,
                backend: "alpha",
                tool: "write",
                exposedName: index === 0 ? HOSTILE : `alpha__write_${index}`,
                sourceHash: "source",
                intentSealed: "sealed",
                intentHash: "hash",
                requiredApprovals: 1,
                requireStepUp: false,
                approvers: [],
                risk: "write",
                createdAt: new Date(now - 100_000 + index * 10),
                expiresAt: new Date(expired ? now - 1000 : now + 3_600_000)
              },
              20
            )
            if (!expired) ids.push(id)
          }
          return ids
        })
      )
      const first = textOf(yield* approvalsPage(gateway))
      expect(first).not.toContain("<svg")
      expect(first).toContain("&lt;svg onload=&quot;alert(1)&quot;&gt;")
      expect(first).toContain(`href="${gateway.baseUrl}/sso/approvals/apr_test000"`)
      expect(first).toContain("<caption>Pending and approved write approvals, oldest first</caption>")
      const next = /<a id="next" href="\/console\/approvals\?after=([\w-]+)">/.exec(first)
      expect(next).not.toBeNull()
      const second = textOf(yield* approvalsPage(gateway, `after=${next![1]}`))
      expect(second).not.toContain('id="next"')
      // The expired one is no longer open; the rest, in order, each once.
      expect([...tableIds(first, "approvals"), ...tableIds(second, "approvals")]).toEqual(created)
      expect(tableIds(first, "approvals")).toHaveLength(APPROVALS_PAGE)
      // The expired one is among the recently finished, with its outcome.
      expect(tableIds(first, "recent")).toEqual(["apr_test001"])
      // Who asked: a user by display name and username, else the token's subject.
      expect(first).toMatch(
        /apr_test002">alpha__write_2<\/a><\/th>\s*<td data-state="pending">pending<\/td><td>[^<]+ \([^)]+\)<\/td>/
      )
      expect(first).toMatch(
        /apr_test003">alpha__write_3<\/a><\/th>\s*<td data-state="pending">pending<\/td><td>person-3<\/td>/
      )
      expect(first).toMatch(/apr_test001">alpha__write_1<\/a><\/th>\s*<td data-state="expired">expired<\/td>/)

      for (const query of [
        "after=%%%",
        "after=abc",
        `after=${Buffer.from("[1,2]").toString("base64url")}`,
        "after=a&after=b"
      ]) {
        const refused = yield* approvalsPage(gateway, query)
        expect(refused, query).toMatchObject({ _tag: "ConsoleProblem", status: 400 })
        expect((refused as ConsoleProblem).message).toContain("after:")
      }
    })
  )
})
