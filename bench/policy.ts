import { Effect, Either, Layer, Schema } from "effect"
import { stringify } from "yaml"
import type { Caller } from "../src/bearer/caller.js"
import { parseConfig } from "../src/config/load.js"
import { Config } from "../src/config/service.js"
import { buildIndex, type CatalogIndex } from "../src/mcp/catalog/index.js"
import { ToolPages } from "../src/mcp/edge/direct-list.js"
import { sdkProfile } from "../src/mcp/edge/sdk-profile.js"
import { AccessState } from "../src/policy/access-state.js"
import { PolicyEngine, PolicyEngineLive } from "../src/policy/engine.js"
import { buildGrant, type Grant, indexGroups } from "../src/policy/grant.js"
import { Permissions } from "../src/policy/permissions.js"
import { roleScopesOf } from "../src/policy/roles.js"
import { GatewayToolRules } from "../src/policy/tool.js"
import type { View } from "../src/policy/view.js"
import type { GroupRow } from "../src/store/groups.js"
import type { MembershipRow } from "../src/store/memberships.js"
import type { UserId, UserRow } from "../src/store/users.js"
import { ensureBuilt } from "./support/build.js"
import { measurePolicyWrites, p95, p99, type WriteFigures } from "./support/policy-writes.js"
import { median, percentile } from "./support/stats.js"
import { formatMs, formatTimes, type Table, verdict } from "./support/table.js"

/** No gateway-provided tools: what is measured here is the backends' tools. */
const GatewayToolsLive = Layer.succeed(GatewayToolRules, [])

export const name = "policy"

const TARGET_DECISION_US = 50
const FLATNESS = 2
const TARGET_LIST_MS = 10
const GROUPS = 2000
const BACKENDS = 10
const TOOLS_PER_BACKEND = 500
const TOOLS_PER_GROUP = 20
const MEMBERSHIPS = [10, 64, 256, 1000, 2000] as const
const PAGE_SIZE = 1000

const toolName = (at: number) => (at === 0 ? "echo" : `tool_${String(at - 1).padStart(4, "0")}`)

const { config, ...loaded } = Either.getOrThrow(
  parseConfig(
    "bench.yaml",
    stringify({
      server: { listen: "127.0.0.1:8080", public_url: "https://gw.example.com/mcp" },
      auth: { issuer: "https://gw.example.com/sso" },
      backends: Array.from({ length: BACKENDS }, (_, at) => ({
        id: `b${at}`,
        url: `https://b${at}.example.com/mcp`,
        tool_rules: [{ tools: ["*"] }, { tools: ["tool_0001"], write: true }]
      }))
    }),
    {}
  )
)

const index: CatalogIndex = buildIndex(
  config.backends.map((backend) => ({
    config: backend,
    catalog: {
      tools: Array.from({ length: TOOLS_PER_BACKEND }, (_, at) => ({
        name: toolName(at),
        inputSchema: { type: "object" as const, properties: { account: { type: "object" as const } } }
      })),
      prompts: [],
      resources: [],
      templates: [],
      completions: false
    }
  }))
)

/**
 * 2,000 permission groups; group g grants 20 tools of backend g mod 10 (tools g*20 … g*20+19, wrapping),
 * every fifth one with a resource rule. So a user in N groups holds N×20 tool grants, and 250 groups
 * (any 256 of them, in practice) cover all 5,000 tools.
 */
const groups: ReadonlyArray<GroupRow> = Array.from({ length: GROUPS }, (_, g) => ({
  id: `g${g}`,
  name: `group ${g}`,
  provider: "gateway:permissions",
  kind: "permission",
  external_id: null,
  managed_locally: true,
  builtin: null,
  enabled: true,
  permissions: Schema.decodeUnknownSync(Permissions)({
    access: [
      {
        endpoint_id: `b${g % BACKENDS}`,
        tools: Array.from({ length: TOOLS_PER_GROUP }, (_, t) =>
          toolName((Math.floor(g / BACKENDS) * TOOLS_PER_GROUP + t) % TOOLS_PER_BACKEND)
        ),
        allow_write_requests: g % 2 === 0,
        resource_rules: g % 5 === 0 ? [{ argument: "/account/region", allowed_values: ["emea", "apac"] }] : []
      }
    ]
  }),
  source_groups: [],
  revision: 1,
  created_at: new Date(0),
  updated_at: new Date(0)
}))
const groupIndex = indexGroups(groups)

const user: UserRow = {
  id: "bench-user" as UserId,
  kind: "local",
  username: "bench",
  display_name: "Bench",
  status: "enabled",
  revision: 1,
  directory_active: true,
  membership_verified_at: null,
  namespace: null,
  external_subject: null,
  created_at: new Date(0),
  updated_at: new Date(0)
}

const grantOf = (memberships: number): Grant => {
  // Distinct groups spread over all of them (7919 is prime, so coprime with 2,000).
  const rows: Array<MembershipRow> = Array.from({ length: memberships }, (_, at) => ({
    user_id: user.id,
    group_id: `g${(at * 7919) % GROUPS}`,
    source: "direct",
    created_at: new Date(0)
  }))
  return buildGrant(user, rows, groupIndex, { roleScopes: roleScopesOf(config), membershipMaxAgeMs: 86_400_000 })
}

const caller: Caller = {
  issuer: "https://gw.example.com/sso",
  subject: user.id,
  scopes: new Set(),
  clientId: "bench",
  sessionId: "bench",
  tokenId: undefined,
  expiresAt: Number.MAX_SAFE_INTEGER
}

/** The real PolicyEngine over a state that answers with `grant`, and the caller's view. */
const engineFor = (grant: Grant) =>
  Effect.runSync(
    Effect.gen(function* () {
      const engine = yield* PolicyEngine
      return { engine, view: yield* engine.view(caller) }
    }).pipe(
      Effect.provide(
        PolicyEngineLive.pipe(
          Layer.provide(
            Layer.mergeAll(
              Layer.succeed(Config, { config, ...loaded }),
              GatewayToolsLive,
              Layer.succeed(AccessState, {
                grantFor: () => Effect.succeed(grant),
                grantOfUser: () => Effect.succeed(grant),
                groups: Effect.succeed(groupIndex),
                epoch: () => 0,
                changed: () => Effect.void,
                onChange: () => () => {},
                settings: {
                  roleScopes: roleScopesOf(config),
                  membershipMaxAgeMs: 86_400_000,
                  externalNamespace: undefined,
                  bootstrapSubjects: new Set<string>()
                }
              })
            )
          )
        )
      )
    )
  )

/** Nanosecond timings of `run`, in rounds; per-call microseconds. */
const timeCalls = (run: () => void, calls: number, rounds: number): ReadonlyArray<number> => {
  for (let n = 0; n < calls; n++) run()
  const perCall: Array<number> = []
  for (let round = 0; round < rounds; round++) {
    const started = process.hrtime.bigint()
    for (let n = 0; n < calls; n++) run()
    perCall.push(Number(process.hrtime.bigint() - started) / 1000 / calls)
  }
  return perCall
}

/** Each call decision picks the next granted tool, half with arguments a rule looks at. */
const decisionCost = (engine: PolicyEngine["Type"], view: View) => {
  const granted = index.tools.filter((tool) => view.seesTool(tool))
  const args = [{ account: { region: "emea" } }, { account: { region: "us" } }]
  let at = 0
  return timeCalls(
    () => {
      const tool = granted[at % granted.length]!
      engine.decide(view, tool, args[at % 2])
      at += 1
    },
    20_000,
    30
  )
}

const cursorMark = '"nextCursor":"'

/**
 * Every page as the gateway serves it (the serialized result, UTF-8 bytes): how many bytes in all. The
 * cursor is read off each page's tail (it is ASCII, so the last bytes decoded alone are enough).
 */
const walkAllPages = (view: View, pages: ToolPages) => {
  let cursor: string | undefined
  let bytes = 0
  do {
    const page = pages.result(index, view, cursor, "modern")!
    bytes += page.length
    const result = page.toString("utf8", Math.max(0, page.length - 4096))
    const mark = result.lastIndexOf(cursorMark)
    cursor =
      mark < 0 ? undefined : result.slice(mark + cursorMark.length, result.indexOf('"', mark + cursorMark.length))
  } while (cursor !== undefined)
  return bytes
}

/** The whole filtered listing for the view: built (cold, a fresh cache) and served from the cache (warm). */
const listingCost = (view: View, tail: string) => {
  const cold: Array<number> = []
  const warm: Array<number> = []
  let bytes = 0
  for (let round = 0; round < 25; round++) {
    const pages = new ToolPages(PAGE_SIZE, tail)
    let started = performance.now()
    bytes = walkAllPages(view, pages)
    cold.push(performance.now() - started)
    started = performance.now()
    walkAllPages(view, pages)
    warm.push(performance.now() - started)
  }
  return { cold: median(cold), warm: median(warm), bytes }
}

const TARGET_WRITE_P95_MS = 100
const TARGET_HEALTHZ_P99_MS = 50
const LARGE_GROUPS = 20

/**
 * Policy writes on a spawned gateway whose store holds 20 large permission groups, against a fresh
 * store in the same run, on both stores: a small write's latency, and `/healthz` while writes run.
 */
const writesTable = async (): Promise<Table> => {
  const entry = await ensureBuilt()
  const rows: Array<ReadonlyArray<string>> = []
  for (const [kind, store] of [
    ["sqlite", "SQLite"],
    ["postgres", "PostgreSQL"]
  ] as const) {
    const fresh = await measurePolicyWrites(entry, kind, 0)
    const loaded = await measurePolicyWrites(entry, kind, LARGE_GROUPS)
    const row = (label: string, of: (figures: WriteFigures) => number, target: number) => {
      const value = of(loaded)
      const baseline = of(fresh)
      return [
        `${store}: ${label}`,
        formatMs(value),
        formatMs(baseline),
        formatTimes(value, baseline),
        `≤ ${target} ms`,
        verdict(value <= target)
      ]
    }
    rows.push(
      row("small write p95 (one at a time)", (figures) => p95(figures.writes), TARGET_WRITE_P95_MS),
      row("small write p95 (while /healthz is asked)", (figures) => p95(figures.loadedWrites), TARGET_WRITE_P95_MS),
      row("/healthz p99 while 20 writes run", (figures) => p99(figures.healthz), TARGET_HEALTHZ_P99_MS),
      [
        `${store}: /healthz max while 20 writes run`,
        formatMs(Math.max(...loaded.healthz)),
        formatMs(Math.max(...fresh.healthz)),
        formatTimes(Math.max(...loaded.healthz), Math.max(...fresh.healthz)),
        "(information)",
        "—"
      ]
    )
  }
  return {
    title: `policy writes: ${LARGE_GROUPS} large permission groups in the store (spawned gateway, Management API)`,
    columns: ["measure", `${LARGE_GROUPS} large groups`, "fresh store", "ratio", "target", "verdict"],
    rows,
    notes: [
      "Each large group: 256 access entries × 4 resource rules × 12 allowed values (about 200 KB of JSON as stored). Baseline: the same writes on a fresh store (the built-in Administrators group and the bench administrator's group) in the same run.",
      "Small writes alternate: create an empty permission group, and `PUT {enabled}` on a small group (If-Match). `/healthz` is asked every 2 ms while 20 such writes run one after another."
    ]
  }
}

export const run = async (): Promise<ReadonlyArray<Table>> => [await decisionTable(), await writesTable()]

const decisionTable = async (): Promise<Table> => {
  const rows: Array<Array<string>> = []
  const medians = new Map<number, number>()
  let at256: { decision: number; list: ReturnType<typeof listingCost> } | undefined
  for (const memberships of MEMBERSHIPS) {
    const buildStarted = performance.now()
    const grant = grantOf(memberships)
    const buildMs = performance.now() - buildStarted
    const { engine, view } = engineFor(grant)
    const perCall = decisionCost(engine, view)
    const p50 = median(perCall)
    medians.set(memberships, p50)
    const visible = index.tools.filter((tool) => view.seesTool(tool)).length
    if (memberships === 256) at256 = { decision: p50, list: listingCost(view, (await sdkProfile()).modernListTail) }
    rows.push([
      `${memberships} of ${GROUPS} groups`,
      String(visible),
      `${p50.toFixed(2)} µs`,
      `${percentile(perCall, 99).toFixed(2)} µs`,
      formatMs(buildMs),
      memberships === 256 ? verdict(p50 <= TARGET_DECISION_US) : ""
    ])
  }
  const smallest = medians.get(10) ?? 0
  const largest = Math.max(...medians.values())
  const flat = largest <= smallest * FLATNESS
  const list = at256!.list
  rows.push(["flatness, 10 → 2,000 groups", "", `${(largest / smallest).toFixed(2)}×`, "", "", verdict(flat)])
  rows.push([
    `tools/list, 256 of ${GROUPS} groups, all pages (built / cached; ${(list.bytes / 1e6).toFixed(1)} MB)`,
    String(index.tools.filter((tool) => engineFor(grantOf(256)).view.seesTool(tool)).length),
    `${formatMs(list.cold)} / ${formatMs(list.warm)}`,
    "",
    "",
    verdict(list.cold <= TARGET_LIST_MS)
  ])
  return {
    title: "policy: call decision and filtered listing (in process)",
    columns: ["user", "visible tools", "decision p50", "decision p99", "grant build (per change)", "target"],
    rows,
    notes: [
      `Targets: decision ≤ ${TARGET_DECISION_US} µs p50 for a user in 256 of 2,000 groups, flat within ${FLATNESS}× from 10 to 2,000; the whole filtered listing of ${BACKENDS * TOOLS_PER_BACKEND} tools ≤ ${TARGET_LIST_MS} ms.`,
      "Each group grants 20 tools of one backend, every fifth with a resource rule; half the decided calls carry arguments such a rule refuses.",
      "The decision reads state derived once per policy change (the grant: built when a user's groups or any group change); no store round trip. The listing is cut and serialized once per (catalog, view fingerprint, cursor) and then served from the page cache."
    ]
  }
}
