// autocannon ships no types and @types/autocannon is not a dependency: only what the bench and the
// heap probe (test/support/heap-probe.ts) use.
declare module "autocannon" {
  export interface Options {
    readonly url: string
    readonly method?: "GET" | "POST"
    readonly body?: string
    readonly connections?: number
    readonly duration?: number
    /** Stop after this many requests instead of after `duration`. */
    readonly amount?: number
    /** Requests sent in turn on every connection. */
    readonly requests?: ReadonlyArray<{
      readonly method?: "GET" | "POST"
      readonly path?: string
      readonly headers?: Readonly<Record<string, string>>
      readonly body?: string
    }>
    readonly pipelining?: number
    readonly timeout?: number
    readonly headers?: Readonly<Record<string, string>>
    readonly warmup?: { readonly connections?: number; readonly duration?: number }
  }

  export interface Histogram {
    readonly average: number
    readonly stddev: number
    readonly min: number
    readonly max: number
    readonly p50: number
    readonly p90: number
    readonly p97_5: number
    readonly p99: number
  }

  export interface Result {
    readonly requests: Histogram & { readonly total: number; readonly sent: number }
    readonly latency: Histogram
    readonly duration: number
    readonly errors: number
    readonly timeouts: number
    readonly non2xx: number
  }

  /** An EventEmitter that is also a thenable of the final result. */
  export interface Instance extends PromiseLike<Result> {
    stop(): void
  }

  export default function autocannon(options: Options): Instance
}
