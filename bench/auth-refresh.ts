import { Effect } from "effect"
import { startAuthGateway } from "./support/auth-gateway.js"
import { arrangeSessions } from "./support/auth-sessions.js"
import { percentile } from "./support/stats.js"
import { formatCount, formatMs, type Table } from "./support/table.js"

export const name = "auth-refresh"

const CHAINS = 16
const WARMUP_SECONDS = 1
const SECONDS = 5

interface Figures {
  readonly perSecond: number
  readonly latencies: ReadonlyArray<number>
  readonly failed: number
}

/**
 * `CHAINS` clients refresh as fast as they can, each with its own session: every request consumes its
 * refresh token (conditional UPDATE) and stores the next one, so it is a write per request.
 */
const measure = async (kind: "sqlite" | "postgres"): Promise<Figures> => {
  const gateway = await startAuthGateway(kind)
  try {
    const sessions = await Effect.runPromise(
      arrangeSessions(CHAINS, `${gateway.origin}/mcp`).pipe(Effect.provide(gateway.base))
    )
    const latencies: Array<number> = []
    let failed = 0
    let done = 0
    const started = performance.now()
    const warmEnd = started + WARMUP_SECONDS * 1000
    const end = warmEnd + SECONDS * 1000
    await Promise.all(
      sessions.map(async (session) => {
        let token = session.refreshToken
        while (performance.now() < end) {
          const sent = performance.now()
          const response = await fetch(`${gateway.origin}/sso/token`, {
            method: "POST",
            headers: { "content-type": "application/x-www-form-urlencoded" },
            body: new URLSearchParams({
              grant_type: "refresh_token",
              client_id: "cli",
              refresh_token: token
            }).toString()
          })
          const body = (await response.json()) as { readonly refresh_token?: string }
          if (response.status !== 200 || body.refresh_token === undefined) {
            failed++
            break
          }
          token = body.refresh_token
          if (sent >= warmEnd) {
            latencies.push(performance.now() - sent)
            done++
          }
        }
      })
    )
    return { perSecond: done / SECONDS, latencies, failed }
  } finally {
    await gateway.close()
  }
}

export const run = async (): Promise<Table> => {
  const sqlite = await measure("sqlite")
  const postgres = await measure("postgres")
  const row = (label: string, figures: Figures) => [
    label,
    formatCount(figures.perSecond),
    formatMs(percentile(figures.latencies, 50)),
    formatMs(percentile(figures.latencies, 99)),
    formatCount(figures.failed)
  ]
  return {
    title: "Token endpoint: refresh-token grant throughput",
    columns: ["store", "refreshes/s", "p50", "p99", "failed"],
    rows: [row("SQLite (WAL)", sqlite), row("PostgreSQL (local)", postgres)],
    notes: [
      `${CHAINS} concurrent clients over keep-alive HTTP, each rotating its own session's token; ` +
        `${WARMUP_SECONDS} s warm-up discarded, ${SECONDS} s measured. Each refresh reads the session and user, ` +
        "consumes the old token with a conditional UPDATE, inserts the new one (one transaction) and signs an " +
        "EdDSA access token. The gateway runs in the bench process (tsx), so figures include the client's cost."
    ]
  }
}
