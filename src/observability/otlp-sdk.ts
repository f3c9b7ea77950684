import { randomUUID } from "node:crypto"
import * as OtelTracer from "@effect/opentelemetry/Tracer"
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto"
import { resourceFromAttributes } from "@opentelemetry/resources"
import { BasicTracerProvider, type SpanExporter, type SpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Effect, type Scope, type Tracer } from "effect"
import type { GatewayConfig } from "../config/schema.js"
import { version } from "../version.js"

/**
 * The OpenTelemetry SDK's part of tracing, loaded only when `observability.otlp_endpoint` is set
 * (src/observability/tracing.ts): a gateway that does not trace never loads the SDK, the exporter or
 * protobufjs at start.
 */
export const startOtlpTracer = (
  config: GatewayConfig,
  endpoint: string,
  timeoutMillis: number,
  processorOf: (exporter: SpanExporter) => SpanProcessor
): Effect.Effect<
  { readonly tracer: Tracer.Tracer; readonly external: typeof OtelTracer.makeExternalSpan },
  never,
  Scope.Scope
> =>
  Effect.gen(function* () {
    const exporter = new OTLPTraceExporter({ url: endpoint, timeoutMillis })
    const resource = resourceFromAttributes({
      "service.name": "gateway",
      "service.version": version,
      "service.instance.id": config.observability.service_instance_id ?? randomUUID()
    })
    const provider = new BasicTracerProvider({ resource, spanProcessors: [processorOf(exporter)] })
    yield* Effect.addFinalizer(() => Effect.promise(() => provider.shutdown().catch(() => {})))
    const tracer = yield* OtelTracer.make.pipe(
      Effect.provideService(OtelTracer.OtelTracer, provider.getTracer("gateway", version))
    )
    return { tracer, external: OtelTracer.makeExternalSpan }
  })
