import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
// The OTLP protobuf definitions as the OpenTelemetry JS project generates them (protobufjs), from npm:
// what the gateway exports is decoded by the schema, not by a parser of the test's own.
import generated from "@opentelemetry/otlp-transformer/build/src/generated/root.js"

// The generated module ships no types: these name the parts read here.
interface Codec<T> {
  decode(body: Uint8Array): T
  encode(message: object): { finish(): Uint8Array }
}
type KeyValues = ReadonlyArray<{ key?: string | null; value?: AnyValue | null }> | null | undefined
interface DecodedRequest {
  resourceSpans?: ReadonlyArray<{
    resource?: { attributes?: KeyValues } | null
    scopeSpans?: ReadonlyArray<{
      spans?: ReadonlyArray<{
        traceId?: Uint8Array | null
        spanId?: Uint8Array | null
        parentSpanId?: Uint8Array | null
        name?: string | null
        kind?: number | null
        attributes?: KeyValues
        status?: { code?: number | null } | null
      }> | null
    }> | null
  }> | null
}
const { ExportTraceServiceRequest, ExportTraceServiceResponse } = (
  generated as unknown as {
    opentelemetry: {
      proto: {
        collector: {
          trace: {
            v1: { ExportTraceServiceRequest: Codec<DecodedRequest>; ExportTraceServiceResponse: Codec<object> }
          }
        }
      }
    }
  }
).opentelemetry.proto.collector.trace.v1

/** One exported span, decoded: ids in hex, attributes as plain values. */
export interface ReceivedSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId: string
  readonly name: string
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client. */
  readonly kind: number
  readonly attributes: Readonly<Record<string, unknown>>
  readonly resource: Readonly<Record<string, unknown>>
  /** OTLP's status code: 0 unset, 1 ok, 2 error. */
  readonly statusCode: number
}

export interface OtlpReceiver {
  /** The `/v1/traces` URL to give `observability.otlp_endpoint`. */
  readonly url: string
  readonly spans: () => ReadonlyArray<ReceivedSpan>
  /** Every request body received, undecoded: what a canary scan reads. */
  readonly bodies: () => ReadonlyArray<Buffer>
  /** Resolves once `predicate` holds of the spans received, or rejects after `timeoutMs`. */
  readonly waitFor: (
    predicate: (spans: ReadonlyArray<ReceivedSpan>) => boolean,
    timeoutMs?: number
  ) => Promise<ReadonlyArray<ReceivedSpan>>
  readonly stop: () => Promise<void>
}

const hex = (bytes: Uint8Array | null | undefined) => Buffer.from(bytes ?? []).toString("hex")

interface AnyValue {
  stringValue?: string | null
  boolValue?: boolean | null
  intValue?: number | { toString(): string } | null
  doubleValue?: number | null
}

const plainValue = (value: AnyValue | null | undefined): unknown => {
  if (value === null || value === undefined) return undefined
  if (value.stringValue !== undefined && value.stringValue !== null) return value.stringValue
  if (value.boolValue !== undefined && value.boolValue !== null) return value.boolValue
  if (value.intValue !== undefined && value.intValue !== null) return Number(String(value.intValue))
  if (value.doubleValue !== undefined && value.doubleValue !== null) return value.doubleValue
  return undefined
}

const attributesOf = (list: KeyValues) =>
  Object.fromEntries((list ?? []).map((each) => [each.key ?? "", plainValue(each.value)]))

/**
 * An OTLP/HTTP traces receiver on loopback (protobuf, as the gateway's exporter sends). `delayMs`: each
 * answer waits that long (a slow collector); `status`: what it answers (503: a failing one).
 */
export const startOtlpReceiver = async (options: { delayMs?: number; status?: number } = {}): Promise<OtlpReceiver> => {
  const spans: Array<ReceivedSpan> = []
  const bodies: Array<Buffer> = []
  const pending = new Set<NodeJS.Timeout>()
  const server: Server = createServer((request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      const body = Buffer.concat(chunks)
      bodies.push(body)
      const status = options.status ?? 200
      if (status === 200) {
        const decoded = ExportTraceServiceRequest.decode(body)
        for (const resourceSpans of decoded.resourceSpans ?? []) {
          const resource = attributesOf(resourceSpans.resource?.attributes)
          for (const scope of resourceSpans.scopeSpans ?? []) {
            for (const span of scope.spans ?? []) {
              spans.push({
                traceId: hex(span.traceId),
                spanId: hex(span.spanId),
                parentSpanId: hex(span.parentSpanId),
                name: span.name ?? "",
                kind: span.kind ?? 0,
                attributes: attributesOf(span.attributes),
                resource,
                statusCode: span.status?.code ?? 0
              })
            }
          }
        }
      }
      const answer = () => {
        if (response.destroyed) return
        response.writeHead(status, { "content-type": "application/x-protobuf" })
        response.end(status === 200 ? Buffer.from(ExportTraceServiceResponse.encode({}).finish()) : undefined)
      }
      if (options.delayMs === undefined) return answer()
      const timer = setTimeout(() => {
        pending.delete(timer)
        answer()
      }, options.delayMs)
      pending.add(timer)
    })
  })
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/v1/traces`,
    spans: () => spans,
    bodies: () => bodies,
    waitFor: async (predicate, timeoutMs = 10_000) => {
      const until = Date.now() + timeoutMs
      while (!predicate(spans)) {
        if (Date.now() > until)
          throw new Error(`the receiver did not get the spans expected (${spans.length} received)`)
        await new Promise((done) => setTimeout(done, 50))
      }
      return spans
    },
    stop: async () => {
      for (const timer of pending) clearTimeout(timer)
      server.closeAllConnections()
      await new Promise<void>((done) => server.close(() => done()))
    }
  }
}
