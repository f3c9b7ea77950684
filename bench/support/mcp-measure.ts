import autocannon from "autocannon"
import { cpuMicros } from "./cpu.js"
import { keepAliveAgent, postTimed, resultOf } from "./json-rpc.js"
import { sampleRss } from "./rss-sampler.js"

/** One endpoint under test with the request it is sent: direct to the backend, or through the gateway. */
export interface Target {
  readonly url: string
  readonly body: string
  readonly headers: Readonly<Record<string, string>>
  /** The process serving it, when its CPU per call is measured (a proxy in front of the backend). */
  readonly pid?: number
}

/**
 * Target indices for one round: forward on even rounds, backward on odd ones (ABBA). A server measured
 * right after another pays for the other's deferred work (garbage collection on a shared core), so a
 * fixed order would favour whichever comes first.
 */
export const roundOrder = (count: number, round: number): ReadonlyArray<number> => {
  const order = Array.from({ length: count }, (_, at) => at)
  return round % 2 === 0 ? order : order.reverse()
}

/**
 * Sequential latencies (concurrency 1) of several targets, interleaved in blocks (ABBA), so a machine that
 * gets busier during the run affects every target alike. Every answer is checked to be a JSON-RPC result.
 */
export const interleavedLatencies = async (
  targets: ReadonlyArray<Target>,
  options: { readonly warmup: number; readonly rounds: number; readonly block: number }
): Promise<ReadonlyArray<ReadonlyArray<number>>> =>
  (await interleavedCalls(targets, options)).map((measured) => measured.ms)

export interface Measured {
  /** Each measured call's latency. */
  readonly ms: ReadonlyArray<number>
  /** The target's process's CPU per measured call, in µs (`undefined` without a `pid`). */
  readonly cpuMicrosPerCall: number | undefined
}

/** `interleavedLatencies`, with each target's CPU per call where it names its process. */
export const interleavedCalls = async (
  targets: ReadonlyArray<Target>,
  options: { readonly warmup: number; readonly rounds: number; readonly block: number }
): Promise<ReadonlyArray<Measured>> => {
  const agents = targets.map(() => keepAliveAgent())
  const samples = targets.map((): Array<number> => [])
  const cpu = targets.map(() => 0)
  const run = async (at: number, count: number, keep: boolean) => {
    const target = targets[at]!
    const before = keep && target.pid !== undefined ? cpuMicros(target.pid) : 0
    for (let n = 0; n < count; n++) {
      const timed = await postTimed(agents[at]!, target.url, target.body, target.headers)
      resultOf(timed)
      if (keep) samples[at]!.push(timed.ms)
    }
    if (keep && target.pid !== undefined) cpu[at]! += cpuMicros(target.pid) - before
  }
  for (const at of targets.keys()) await run(at, options.warmup, false)
  for (let round = 0; round < options.rounds; round++) {
    for (const at of roundOrder(targets.length, round)) await run(at, options.block, true)
  }
  for (const agent of agents) agent.destroy()
  return targets.map((target, at) => ({
    ms: samples[at]!,
    cpuMicrosPerCall: target.pid === undefined ? undefined : cpu[at]! / Math.max(1, samples[at]!.length)
  }))
}

export interface Throughput {
  readonly requestsPerSecond: number
  readonly failed: number
  readonly peakRssMb: number | undefined
  /** The target's process's CPU per answered request over the measured seconds, in µs (with a `pid`). */
  readonly cpuMicrosPerCall: number | undefined
}

/**
 * autocannon with `connections` keep-alive connections: a warm-up run, then the measured one. With a
 * `pid` (the target's, or `pid`: the server whose RSS to sample) its RSS is sampled and its CPU per
 * request counted over the measured run only.
 */
export const throughput = async (
  target: Target,
  options: { readonly connections: number; readonly warmupSeconds: number; readonly seconds: number },
  pid: number | undefined = target.pid
): Promise<Throughput> => {
  const load = (seconds: number) =>
    autocannon({
      url: target.url,
      method: "POST",
      headers: { ...target.headers },
      body: target.body,
      connections: options.connections,
      duration: seconds,
      timeout: 10
    })
  await load(options.warmupSeconds)
  const sampler = pid === undefined ? undefined : sampleRss(pid)
  const before = pid === undefined ? 0 : cpuMicros(pid)
  const result = await load(options.seconds)
  const spent = pid === undefined ? 0 : cpuMicros(pid) - before
  return {
    requestsPerSecond: result.requests.average,
    failed: result.errors + result.timeouts + result.non2xx,
    peakRssMb: sampler?.stop(),
    cpuMicrosPerCall: pid === undefined ? undefined : spent / Math.max(1, result.requests.total)
  }
}

/** One second of load on `connections` new keep-alive connections, not measured. */
export const settle = async (target: Target, connections: number): Promise<void> => {
  await autocannon({
    url: target.url,
    method: "POST",
    headers: { ...target.headers },
    body: target.body,
    connections,
    duration: 1,
    timeout: 10
  })
}

/** Walks every page of `tools/list` once: the whole walk's and the first page's milliseconds, and the tools seen. */
export const walkToolsList = async (
  target: Target,
  agent: ReturnType<typeof keepAliveAgent>,
  withCursor: (cursor: string) => Target
): Promise<{ readonly ms: number; readonly firstPageMs: number; readonly tools: number }> => {
  let ms = 0
  let firstPageMs: number | undefined
  let tools = 0
  let page: Target | undefined = target
  while (page !== undefined) {
    const timed = await postTimed(agent, page.url, page.body, page.headers)
    const result = resultOf(timed)
    ms += timed.ms
    firstPageMs ??= timed.ms
    tools += (result["tools"] as ReadonlyArray<unknown>).length
    const next = result["nextCursor"]
    page = typeof next === "string" ? withCursor(next) : undefined
  }
  return { ms, firstPageMs: firstPageMs ?? 0, tools }
}
