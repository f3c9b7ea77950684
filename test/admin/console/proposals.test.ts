/**
 * docs/console.md, "Tool sources, approvals and audit" — the console's list of configuration proposals
 * on both stores: newest first, a page at a time (ties of time broken by id) without gaps or repeats,
 * a state filter kept across pages, hostile target ids escaped, bad positions refused.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { PROPOSALS_PAGE, proposalsSection } from "../../../src/admin/console/pages/proposals.js"
import type { ConsoleProblem } from "../../../src/admin/console/route.js"
import { ProposalRepo } from "../../../src/store/source-proposals.js"
import { builtinAdmin, consoleRequest, runConsoleRoute } from "../../support/console-request.js"
import { storeKinds } from "../../support/databases.js"
import { inGateway, type OAuthGateway, oauthGateway } from "../../support/oauth-gateway.js"

const HOSTILE = `"><iframe src=x>`
const route = proposalsSection.routes.find((each) => each.path === "/console/proposals")!

const listPage = (gateway: OAuthGateway, query = "") =>
  Effect.flatMap(builtinAdmin(gateway), (admin) =>
    runConsoleRoute(gateway, route, consoleRequest(admin, { query: new URLSearchParams(query) }))
  )

const textOf = (answer: unknown) => {
  const page = answer as { _tag: string; body?: { text: string } }
  if (page._tag !== "Page") throw new Error(`expected a page, got ${JSON.stringify(answer)}`)
  return page.body!.text
}

const linkedIds = (text: string) =>
  [...text.matchAll(/href="\/console\/proposals\/(p-[\w-]+)"/g)].map((match) => match[1]!)

/** Every page of `query`, following the "Older proposals" link: the ids in order. */
const walk = (gateway: OAuthGateway, query: string) =>
  Effect.gen(function* () {
    const ids: Array<string> = []
    let next: string | undefined = query
    while (next !== undefined) {
      const text = textOf(yield* listPage(gateway, next))
      ids.push(...linkedIds(text))
      const older = /<a id="older" href="\/console\/proposals\?([^"]+)">/.exec(text)
      next = older === null ? undefined : older[1]!.replaceAll("&amp;", "&")
      if (next !== undefined)
        expect(new URLSearchParams(next).get("state") ?? "").toBe(new URLSearchParams(query).get("state") ?? "")
    }
    return ids
  })

describe.each(storeKinds)("console: configuration proposals (%s)", (kind) => {
  it.scopedLive("lists proposals newest first, a page at a time, by state", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway({ kind })
      const at = Date.parse("2026-04-01T00:00:00.000Z")
      const written = yield* inGateway(gateway)(
        Effect.gen(function* () {
          const repo = yield* ProposalRepo
          const rows: Array<{ id: string; at: number; applied: boolean }> = []
          for (let index = 0; index < PROPOSALS_PAGE + 5; index++) {
            const id = `p-${String(index).padStart(3, "0")}`
            // Pairs share a millisecond: the order falls back to the id.
            const created = at + Math.floor(index / 2)
            yield* repo.insert({
              id,
              kind: "backend",
              targetId: index === 0 ? HOSTILE : `b${index}`,
              action: "create",
              definition: "{}",
              baseRevisions: {},
              proposedBy: { user_id: "u1", name: "Proposer" },
              at: new Date(created)
            })
            const applied = index % 3 === 0
            if (applied) yield* repo.transition(id, "pending_approval", "applied", {})
            rows.push({ id, at: created, applied })
          }
          return rows
        })
      )
      const newestFirst = (rows: typeof written) =>
        [...rows].sort((a, b) => b.at - a.at || (a.id < b.id ? 1 : -1)).map((row) => row.id)

      expect(yield* walk(gateway, "")).toEqual(newestFirst(written))
      expect(yield* walk(gateway, "state=applied")).toEqual(newestFirst(written.filter((row) => row.applied)))
      expect(yield* walk(gateway, "state=pending_approval")).toEqual(newestFirst(written.filter((row) => !row.applied)))

      const last = textOf(
        yield* listPage(gateway, `after=${/after=([\w-]+)/.exec(textOf(yield* listPage(gateway)))![1]}`)
      )
      expect(last).not.toContain("<iframe")
      expect(last).toContain("&quot;&gt;&lt;iframe src=x&gt;")

      for (const query of ["after=!!", "after=a&after=b", `after=${Buffer.from('["x","y"]').toString("base64url")}`]) {
        const refused = yield* listPage(gateway, query)
        expect(refused, query).toMatchObject({ _tag: "ConsoleProblem", status: 400 })
        expect((refused as ConsoleProblem).message).toContain("after:")
      }
    })
  )
})
