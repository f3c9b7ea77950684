import { Duration, Effect, Layer, Redacted } from "effect"
import { Agent, type Dispatcher } from "undici"
import { EventLimiter, securityEvent } from "../../events/security-log.js"
import { headerValue } from "../../http/header-syntax.js"
import type { HttpEndpoint, HttpToolSpec } from "../schema.js"
import { minScrubbed, toolResult } from "./answer.js"
import { framingHeaders, reservedHeaders } from "./headers.js"
import { compileInputSchema, describeError } from "./input-schema.js"
import { pointerTokens, resolvePointer } from "./pointer.js"
import { send } from "./request.js"
import { HttpToolInvalidArguments, HttpTools } from "./service.js"
import { expandTemplate, type Parsed, parseTemplate } from "./template.js"

/**
 * HTTP tool calls (docs/tool-sources.md, "HTTP tools"): validate the arguments against the tool's input
 * schema (ajv), expand the URL template (src/sources/http/template.ts), add the endpoint's headers and
 * credentials and the argument headers, send over undici within the endpoint's limits, and map the
 * answer to MCP content. Invalid arguments fail with `HttpToolInvalidArguments`; everything that goes
 * wrong with the request is an `isError` result whose text holds no secret, header value or query.
 */

export interface HttpToolsOptions {
  /** PEM trust anchors instead of the system roots (tests use the test CA). */
  readonly ca?: string
}

const maxTemplates = 1024
const templates = new Map<string, Parsed>()

const parsedTemplate = (url: string): Parsed => {
  const known = templates.get(url)
  if (known !== undefined) return known
  const parsed = parseTemplate(url)
  if (templates.size >= maxTemplates) templates.clear()
  templates.set(url, parsed)
  return parsed
}

const failed = (text: string) => ({ content: [{ type: "text" as const, text }], isError: true })

const limiter = new EventLimiter()

/** One log line per event, tool and minute at most ten times (a failing service must not flood the log). */
const logLimited = (
  event: string,
  endpoint: HttpEndpoint,
  tool: HttpToolSpec,
  fields: Record<string, unknown>,
  level: "security" | "warn" = "security"
) =>
  Effect.suspend(() => {
    const suppressed = limiter.admit(`${event}:${endpoint.id}:${tool.name}`, Date.now())
    if (suppressed === undefined) return Effect.void
    const all = { endpoint_id: endpoint.id, tool: tool.name, ...fields, ...(suppressed > 0 ? { suppressed } : {}) }
    return level === "security"
      ? securityEvent(event, all)
      : Effect.logWarning(event).pipe(Effect.annotateLogs({ event, ...all }))
  })

/** The secret strings of an endpoint, searched for in what goes back to the caller. */
const secretsOf = (endpoint: HttpEndpoint): ReadonlyArray<string> => {
  const secrets: Array<string> = Object.values(endpoint.headers).map(Redacted.value)
  const credentials = endpoint.credentials
  if (credentials?.type === "bearer") secrets.push(Redacted.value(credentials.token))
  if (credentials?.type === "basic") {
    const password = Redacted.value(credentials.password)
    secrets.push(password, Buffer.from(`${credentials.username}:${password}`).toString("base64"))
  }
  return secrets.filter((secret) => secret.length >= minScrubbed)
}

const fixedHeaders = (endpoint: HttpEndpoint, hasBody: boolean): Record<string, string> => {
  const headers: Record<string, string> = { accept: "application/json, text/*;q=0.9, */*;q=0.1" }
  for (const [name, value] of Object.entries(endpoint.headers)) headers[name.toLowerCase()] = Redacted.value(value)
  const credentials = endpoint.credentials
  if (credentials?.type === "bearer") headers["authorization"] = `Bearer ${Redacted.value(credentials.token)}`
  if (credentials?.type === "basic")
    headers["authorization"] =
      `Basic ${Buffer.from(`${credentials.username}:${Redacted.value(credentials.password)}`).toString("base64")}`
  if (hasBody) headers["content-type"] = "application/json"
  return headers
}

export const makeHttpTools = (dispatcher: Dispatcher): HttpTools["Type"] => ({
  call: (endpoint, tool, given, signal) =>
    Effect.gen(function* () {
      const args = given ?? {}
      const schema = compileInputSchema(tool.input_schema)
      if (!schema.ok) return failed("the tool's input schema does not compile; an administrator must fix the tool")
      if (!schema.validate(args))
        return yield* new HttpToolInvalidArguments({ message: describeError(schema.validate.errors) })

      const parsed = parsedTemplate(tool.url)
      if (!parsed.ok) return failed("the tool's URL template is not valid; an administrator must fix the tool")
      if (parsed.template.scheme === "http" && !endpoint.allow_insecure_http)
        return failed("the tool's URL is http:// and the endpoint does not allow insecure HTTP")
      const expanded = expandTemplate(parsed.template, args)
      if (!expanded.ok) {
        if (expanded.shape) yield* logLimited("http_tool.url_refused", endpoint, tool, { reason: expanded.message })
        return yield* new HttpToolInvalidArguments({ message: expanded.message })
      }

      let body: string | undefined
      if (tool.body !== undefined && tool.method !== "GET" && tool.method !== "HEAD") {
        const tokens = pointerTokens(tool.body.argument)
        if (tokens === undefined || tokens.length === 0)
          return failed("the tool's body pointer is not valid; an administrator must fix the tool")
        const value = resolvePointer(args, tokens)
        if (value !== undefined) body = JSON.stringify(value)
      }
      if (Object.keys(endpoint.headers).some((name) => framingHeaders.has(name.toLowerCase())))
        return failed(
          "the endpoint's fixed headers set a framing header (host, content-length, …); an administrator must fix the endpoint"
        )
      const headers = fixedHeaders(endpoint, body !== undefined)
      for (const [name, pointer] of Object.entries(tool.argument_headers)) {
        const lower = name.toLowerCase()
        if (reservedHeaders.has(lower) || headers[lower] !== undefined)
          return failed(`the header ${lower} is set by the gateway or the endpoint; an argument cannot set it`)
        const tokens = pointerTokens(pointer)
        if (tokens === undefined || tokens.length === 0)
          return failed(`the tool's pointer for the header ${lower} is not valid; an administrator must fix the tool`)
        const value = resolvePointer(args, tokens)
        if (value === undefined) continue
        if (typeof value !== "string")
          return yield* new HttpToolInvalidArguments({
            message: `argument ${pointer}: a header value must be a string`
          })
        if (!headerValue.test(value))
          return yield* new HttpToolInvalidArguments({
            message: `argument ${pointer}: a header value must be printable ASCII, without CR, LF or NUL`
          })
        headers[lower] = value
      }

      const sent = yield* Effect.promise((interrupted) =>
        send(
          dispatcher,
          { origin: expanded.origin, target: expanded.target, method: tool.method, headers, body },
          { timeoutMs: Duration.toMillis(endpoint.timeouts.call), maxBytes: endpoint.max_answer_bytes },
          [signal, interrupted]
        )
      )
      if (!sent.ok) {
        if (sent.reason === "redirect_refused")
          yield* logLimited("http_tool.redirect_refused", endpoint, tool, {
            from_origin: expanded.origin,
            to_origin: sent.redirectedTo ?? null
          })
        else yield* logLimited("http_tool.call_failed", endpoint, tool, { reason: sent.reason }, "warn")
        return failed(sent.message)
      }
      return toolResult(sent, secretsOf(endpoint))
    })
})

/** The agent's connections: kept alive, verification always on (whatever NODE_TLS_REJECT_UNAUTHORIZED says). */
const agentFor = (options: HttpToolsOptions) =>
  new Agent({
    connect: { rejectUnauthorized: true, ...(options.ca === undefined ? {} : { ca: options.ca }) },
    headersTimeout: 0,
    bodyTimeout: 0
  })

export const httpToolsLayer = (options: HttpToolsOptions = {}): Layer.Layer<HttpTools> =>
  Layer.scoped(
    HttpTools,
    Effect.map(
      Effect.acquireRelease(
        Effect.sync(() => agentFor(options)),
        (agent) => Effect.promise(() => agent.destroy())
      ),
      makeHttpTools
    )
  )

/** With the system's trust anchors (and NODE_EXTRA_CA_CERTS). */
export const HttpToolsLive: Layer.Layer<HttpTools> = httpToolsLayer()
