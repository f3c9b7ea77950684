import autocannon, { type Result } from "autocannon"

/** One load profile for every server in a suite, so their figures are comparable. */
export const LOAD = {
  connections: 32,
  warmupSeconds: 2,
  durationSeconds: 5
} as const

export interface LoadFigures {
  readonly requestsPerSecond: number
  readonly p50Ms: number
  readonly p99Ms: number
  readonly total: number
  readonly failed: number
}

const figures = (result: Result): LoadFigures => ({
  requestsPerSecond: result.requests.average,
  p50Ms: result.latency.p50,
  p99Ms: result.latency.p99,
  total: result.requests.total,
  failed: result.errors + result.timeouts + result.non2xx
})

/** autocannon in this process (the servers are children); the warm-up run is discarded by autocannon itself. */
export const load = async (url: string): Promise<LoadFigures> =>
  figures(
    await autocannon({
      url,
      connections: LOAD.connections,
      duration: LOAD.durationSeconds,
      timeout: 10,
      warmup: { connections: LOAD.connections, duration: LOAD.warmupSeconds }
    })
  )
