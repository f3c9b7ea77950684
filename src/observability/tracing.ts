import type { ReadableSpan, SpanExporter, SpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Context, Effect, Exit, Layer, Option, type Tracer } from "effect"
import type { GatewayConfig } from "../config/schema.js"
import { metrics } from "./metrics.js"

/**
 * Traces (docs/operations.md, "Traces"; docs/decisions.md, "Traces through Effect's tracer"): the
 * gateway's spans go through one Effect `Tracer` made by `@effect/opentelemetry` over the OpenTelemetry
 * JS SDK, exported with OTLP over HTTP (protobuf) to `observability.otlp_endpoint`.
 *
 * Off (no endpoint) is `tracer: undefined`: no provider, no exporter, no timer, and the request paths
 * test one field and create nothing. Process-wide: the endpoint is static.
 */
export interface TracingShape {
  readonly tracer: Tracer.Tracer | undefined
  /** Makes a client's span the parent (`@effect/opentelemetry`'s, with its trace flags and state); set with `tracer`. */
  readonly external?: ExternalSpanMaker | undefined
}

export type ExternalSpanMaker = (options: {
  readonly traceId: string
  readonly spanId: string
  readonly traceFlags?: number | undefined
  readonly traceState?: string | undefined
}) => Tracer.ExternalSpan

export class Tracing extends Context.Reference<Tracing>()("gateway/Tracing", {
  defaultValue: (): TracingShape => ({ tracer: undefined })
}) {}

/** Spans per export request. */
const BATCH_SIZE = 512
/** A partial batch waits at most this long. */
const EXPORT_EVERY_MS = 1_000
/** One export request may take this long; the receiver being slow then costs spans, never requests. */
const EXPORT_TIMEOUT_MS = 2_000
/** At shutdown the queue has this long to leave. */
const SHUTDOWN_FLUSH_MS = 2_000

/**
 * The SDK's BatchSpanProcessor, with what it lacks here: every drop is counted
 * (`gateway_trace_spans_dropped_total`: a full queue, a failed export) and exports never overlap, so a
 * receiver that is down or slow holds one request and a bounded queue. `onEnd` is a push or a count.
 */
export class BoundedExport implements SpanProcessor {
  private queue: Array<ReadableSpan> = []
  private exporting: Promise<void> | undefined
  private readonly timer: NodeJS.Timeout

  constructor(
    private readonly exporter: SpanExporter,
    private readonly maxQueue: number
  ) {
    this.timer = setInterval(() => this.exportSome(), EXPORT_EVERY_MS)
    this.timer.unref()
  }

  onStart(): void {}

  onEnd(span: ReadableSpan): void {
    if (this.queue.length >= this.maxQueue) {
      metrics.spansDroppedBy("queue_full", 1)
      return
    }
    this.queue.push(span)
    if (this.queue.length >= BATCH_SIZE) this.exportSome()
  }

  private exportSome(): void {
    if (this.exporting !== undefined || this.queue.length === 0) return
    const batch = this.queue.splice(0, BATCH_SIZE)
    this.exporting = new Promise<void>((done) => {
      let settled = false
      const settle = (exported: boolean) => {
        if (settled) return
        settled = true
        clearTimeout(timeout)
        if (exported) metrics.spansExportedCount(batch.length)
        else metrics.spansDroppedBy("export_failed", batch.length)
        this.exporting = undefined
        done()
        if (this.queue.length >= BATCH_SIZE) this.exportSome()
      }
      // The exporter's own timeout covers the request; this one covers its retries as well.
      const timeout = setTimeout(() => settle(false), EXPORT_TIMEOUT_MS * 2)
      timeout.unref()
      try {
        this.exporter.export(batch, (result: { readonly code: number }) => settle(result.code === 0))
      } catch {
        settle(false)
      }
    })
  }

  async forceFlush(): Promise<void> {
    const until = Date.now() + SHUTDOWN_FLUSH_MS
    while ((this.queue.length > 0 || this.exporting !== undefined) && Date.now() < until) {
      this.exportSome()
      await this.exporting
    }
  }

  async shutdown(): Promise<void> {
    clearInterval(this.timer)
    await this.forceFlush()
    metrics.spansDroppedBy("export_failed", this.queue.length)
    this.queue = []
    await this.exporter.shutdown().catch(() => {})
  }
}

/**
 * The Tracing of a configuration: off without `observability.otlp_endpoint`. On, the SDK is loaded here
 * (./otlp-sdk.ts), so a gateway that does not trace never loads it; its resource names the service
 * (`gateway`), its version and instance id.
 */
export const tracingLayer = (config: GatewayConfig): Layer.Layer<Tracing> => {
  const endpoint = config.observability.otlp_endpoint
  if (endpoint === undefined) return Layer.succeed(Tracing, { tracer: undefined })
  const queueSize = config.observability.trace_queue_size
  return Layer.scoped(
    Tracing,
    Effect.gen(function* () {
      const { startOtlpTracer } = yield* Effect.promise(() => import("./otlp-sdk.js"))
      return yield* startOtlpTracer(
        config,
        endpoint,
        EXPORT_TIMEOUT_MS,
        (exporter) => new BoundedExport(exporter, queueSize)
      )
    })
  )
}

// Span times are epoch nanoseconds (what Effect's clock gives its own spans), from the monotonic clock.
const originNanos = BigInt(Date.now()) * 1_000_000n - process.hrtime.bigint()
export const nowNanos = (): bigint => originNanos + process.hrtime.bigint()

/** A span's failure, in fixed words (`error.type`): never a message that could carry a value. */
class SpanFailure extends Error {
  constructor(readonly type: string) {
    super(type)
    this.name = "SpanFailure"
    this.stack = ""
  }
}

/**
 * Opens a span of `tracer` outside a fiber: the /mcp path is plain promises (docs/decisions.md,
 * "/mcp outside the Effect router"), so its spans are the same Effect spans `Effect.withSpan` makes,
 * opened and ended by hand rather than by a fiber per span.
 */
export const openSpan = (
  tracer: Tracer.Tracer,
  name: string,
  parent: Tracer.AnySpan | undefined,
  kind: Tracer.SpanKind,
  attributes?: Readonly<Record<string, string | number | boolean>>
): Tracer.Span => {
  const span = tracer.span(name, Option.fromNullable(parent), Context.empty(), [], nowNanos(), kind)
  if (attributes !== undefined) for (const key in attributes) span.attribute(key, attributes[key])
  return span
}

/** Ends a span: `errorType` (fixed words) marks it failed. */
export const closeSpan = (span: Tracer.Span, errorType?: string): void => {
  if (errorType === undefined) {
    span.end(nowNanos(), Exit.void)
    return
  }
  span.attribute("error.type", errorType)
  span.end(nowNanos(), Exit.fail(new SpanFailure(errorType)))
}

/** The W3C `traceparent` naming `span` as the parent (sampled). */
export const traceparentOf = (span: Tracer.AnySpan): string => `00-${span.traceId}-${span.spanId}-01`

/** The W3C trace context a request to a backend carries: `tracestate` only when the trace has one. */
export interface TraceHeaders {
  readonly traceparent: string
  readonly tracestate?: string
}

/** The OpenTelemetry span under an `@effect/opentelemetry` span: its context holds the trace's state. */
interface WithOtelSpan {
  readonly span?: { readonly spanContext?: () => { readonly traceState?: { serialize(): string } } }
}

/**
 * The W3C `traceparent` naming `span` as the parent, and the `tracestate` the span carries (a client's,
 * continued under `observability.trust_incoming_trace`, which the SDK hands down to every child span).
 */
export const traceHeadersOf = (span: Tracer.AnySpan): TraceHeaders => {
  const tracestate = (span as WithOtelSpan).span?.spanContext?.().traceState?.serialize()
  return tracestate === undefined || tracestate === ""
    ? { traceparent: traceparentOf(span) }
    : { traceparent: traceparentOf(span), tracestate }
}

const traceparentFormat = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/

/**
 * A client's `traceparent` (and `tracestate`) as the parent of the request's span; undefined when
 * absent or malformed (W3C Trace Context: all-zero ids and version ff are invalid). The header is the
 * client's text: only the exact format is accepted, nothing of it is logged.
 */
export const incomingParent = (
  traceparent: string | ReadonlyArray<string> | undefined,
  tracestate: string | ReadonlyArray<string> | undefined,
  makeExternalSpan: ExternalSpanMaker | undefined
): Tracer.ExternalSpan | undefined => {
  if (typeof traceparent !== "string" || makeExternalSpan === undefined) return undefined
  const match = traceparentFormat.exec(traceparent.trim())
  if (match === null) return undefined
  const [, versionText, traceId, spanId, flags] = match
  if (versionText === "ff" || /^0+$/.test(traceId!) || /^0+$/.test(spanId!)) return undefined
  const state = typeof tracestate === "string" && tracestate.length <= 512 ? tracestate : undefined
  return makeExternalSpan({
    traceId: traceId!,
    spanId: spanId!,
    traceFlags: Number.parseInt(flags!, 16),
    ...(state === undefined ? {} : { traceState: state })
  })
}
