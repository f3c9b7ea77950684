import { ProtocolError, ProtocolErrorCode } from "@modelcontextprotocol/server"
import { Context, Duration, Effect, Exit, Layer, Runtime, type Tracer } from "effect"
import { approvalUrlOf, pendingResult, requestRefusal } from "../../approvals/answers.js"
import { Approvals } from "../../approvals/service.js"
import { approvalSettingsOf } from "../../approvals/settings.js"
import { type ApprovalSource, sourceHashOf } from "../../approvals/source.js"
import { Config } from "../../config/service.js"
import { EventLimiter, securityEvent } from "../../events/security-log.js"
import { isRecord, putField } from "../../json.js"
import { closeSpan, openSpan, type TraceHeaders, Tracing } from "../../observability/tracing.js"
import type { CallDecision } from "../../policy/decide.js"
import { PolicyEngine } from "../../policy/engine.js"
import type { View } from "../../policy/view.js"
import { abortSignalOf, type Cancellation } from "../../runtime/cancellation.js"
import { HttpTools } from "../../sources/http/service.js"
import { unreservedMeta, withoutReservedMeta } from "../catalog/backend-catalog.js"
import type { GatewayToolRunner } from "../catalog/gateway-tools.js"
import type { ExposedTool, ToolTarget } from "../catalog/index.js"
import { exposeContentUris, type Naming, namingOf } from "../catalog/naming.js"
import { shortText } from "../echo.js"
import { Backends } from "../upstream/backends.js"
import { type BackendChannel, type CallOptions, ChannelFailure, type JsonRpcErrorObject } from "../upstream/channel.js"
import {
  answerDropped,
  backendFailed,
  backendTimedOut,
  backendUnavailable,
  type ForwardTarget,
  forward,
  inputNotRelayed,
  requestTimeoutCode
} from "../upstream/forward.js"
import { countCall, observeBackendCall, observeDecision, spanBackendCall } from "./call-telemetry.js"
import { answers, type ClientProfile, capabilitiesOf, noProfile } from "./client-profile.js"
import { MAX_ARGUMENT_DEPTH, nestsDeeperThan, tooDeep } from "./depth.js"
import { AccessWithdrawn, InFlightCalls } from "./in-flight.js"
import { type InputAnswer, InputRelay } from "./input-relay.js"
import { atLeast, type LoggingLevel } from "./log-levels.js"

/** One `tools/call` of one caller, whichever way it reached the gateway. */
export interface ToolCallRequest {
  /** The caller's view for this request (src/policy/view.ts). */
  readonly view: View
  /** The exposed name (`<backend>__<tool>`). */
  readonly name: string
  readonly arguments: Record<string, unknown> | undefined
  /** The caller's JSON-RPC id: a `notifications/cancelled` names it. */
  readonly requestId: string | number
  /** The request's cancellation: disconnect, request_timeout, generation closing. */
  readonly signal: Cancellation
  /** Absolute deadline (ms since epoch) for the backend's answer. */
  readonly deadline: number
  /** Progress the backend reports, when the caller asked for it. */
  readonly onProgress?: (progress: Record<string, unknown>) => void
  /**
   * Log messages (`notifications/message` params) the backend sends during the call, at or above
   * `logLevel` when the caller named one (docs/mcp.md, "Logging"); absent: the caller gets none.
   */
  readonly onLog?: (message: Record<string, unknown>) => void
  readonly logLevel?: LoggingLevel
  /**
   * A 2026-07-28 multi-round-trip call (docs/mcp.md, "Input requests"): the caller can receive an
   * `input_required` result; its retry carries `inputResponses` and the backend's `requestState`,
   * passed on as they are. Every leg is decided again like any call.
   */
  readonly multiRound?: {
    readonly inputResponses?: Record<string, unknown> | undefined
    readonly requestState?: string | undefined
    /** The input the caller can give (its `elicitation`, `sampling` capabilities), told to the backend. */
    readonly clientCapabilities?: Record<string, unknown> | undefined
  }
  /**
   * A 2025-era caller on a stream: the gateway asks it for the input a backend needs (sent on the
   * call's stream with a gateway-minted id, answered by a POST of its own; InputRelay) and sends the
   * backend the retry itself. Absent: a backend's request for input is answered as not relayed.
   */
  readonly askCaller?: (request: { readonly method: string; readonly params: unknown }) => Promise<InputAnswer>
  /**
   * With `askCaller`: what the 2025-era caller declared in its `initialize`, carried by the gateway's
   * session id (src/mcp/calls/client-profile.ts); undefined when the caller sent none.
   */
  readonly clientProfile?: ClientProfile
  /** The request's span, when tracing is on: the decision's and the backend call's spans are its children. */
  readonly span?: Tracer.AnySpan
}

export type ToolCallOutcome =
  /**
   * The backend's result: reserved `_meta` removed, resource URIs exposed; the protocol layer stamps its
   * own. `release`: the memory its answer holds of the gateway-wide budget (docs/operations.md, "Memory
   * held for backend answers"), to call once the result is written to the caller.
   */
  | { readonly _tag: "Result"; readonly result: Record<string, unknown>; readonly release?: () => void }
  /** `fromBackend`: the backend itself answered with this error (it was reached and said no). */
  | { readonly _tag: "Error"; readonly error: JsonRpcErrorObject; readonly fromBackend?: true }
  /** The request itself was cancelled: nobody is left to answer. */
  | { readonly _tag: "Cancelled" }

/**
 * The one owner of `tools/call` (docs/mcp.md, "How a request travels"): resolve the exposed name,
 * **decide** (the PolicyEngine's pipeline of named checks), execute over the backend, and tell the
 * caller. Both of /mcp's paths — the gateway's direct answer and the MCP SDK's handler — go through
 * it, so every call rule holds on both. A call the policy stops allowing while it runs is cancelled.
 */
export class ToolCalls extends Context.Tag("gateway/ToolCalls")<
  ToolCalls,
  {
    readonly call: (request: ToolCallRequest) => Promise<ToolCallOutcome>
    /** Backend calls in flight on either path, so a `notifications/cancelled` finds the one it names. */
    readonly inFlight: InFlightCalls
    /** Requests for input sent to 2025-era callers, waiting for their answers (docs/mcp.md, "Input requests"). */
    readonly inputs: InputRelay
  }
>() {}

type BackendTarget = Extract<ToolTarget, { readonly _tag: "Backend" }>
type HttpTarget = Extract<ToolTarget, { readonly _tag: "Http" }>

const error = (code: number, message: string): ToolCallOutcome => ({ _tag: "Error", error: { code, message } })

/** The same answer as for a tool that does not exist: unpublished, invisible and denied tools are not revealed. */
export const unknownTool = (name: string) => error(ProtocolErrorCode.InvalidParams, `Unknown tool: ${shortText(name)}`)

const withdrawnAnswer = error(ProtocolErrorCode.InternalError, new AccessWithdrawn().message)

/** A backend asked for input by a method the gateway does not relay to the caller. */
const inputNotAsked = (backend: string, method: string) =>
  `Backend "${backend}" asked for input with "${shortText(method)}", which the gateway does not relay.`

/**
 * A CallToolResult as the caller may get it; for a multi-round-trip request, the `input_required`
 * result when the caller can take one (`multiRound`), else "input"; undefined when it is not a
 * CallToolResult at all.
 */
const callResult = (
  result: Record<string, unknown>,
  naming: Naming,
  multiRound: boolean
): Record<string, unknown> | "input" | undefined => {
  const { content, isError, structuredContent, resultType } = result
  if (resultType === "input_required") return multiRound ? inputRequiredResult(result) : "input"
  if (resultType !== undefined && resultType !== "complete") return undefined
  const blocks =
    content === undefined ||
    (Array.isArray(content) && content.every((block) => isRecord(block) && typeof block["type"] === "string"))
  if (!blocks || (isError !== undefined && typeof isError !== "boolean")) return undefined
  if (structuredContent !== undefined && !isRecord(structuredContent)) return undefined
  return exposedResult(result, naming)
}

/**
 * A CallToolResult as the caller gets it: without `resultType` (the protocol layer stamps its own) and
 * the reserved `_meta` keys, its content's resource URIs exposed. Built key by key (`putField`), not by
 * spreads: this runs on every forwarded call.
 */
const exposedResult = (result: Record<string, unknown>, naming: Naming): Record<string, unknown> => {
  const exposed: Record<string, unknown> = {}
  for (const key of Object.keys(result)) {
    if (key === "resultType" || key === "_meta") continue
    putField(exposed, key, key === "content" ? exposeContentUris(naming, result[key] ?? []) : result[key])
  }
  if (!Object.hasOwn(exposed, "content")) exposed["content"] = exposeContentUris(naming, [])
  const meta = result["_meta"]
  // An object: without the reserved keys (dropped when none is left); anything else is passed on as it came.
  const kept = meta !== null && typeof meta === "object" ? unreservedMeta(meta) : meta
  if (kept !== undefined) exposed["_meta"] = kept
  return exposed
}

/** Of a caller's client capabilities, those that let a backend ask it for input. */
const inputCapabilities = (declared: Record<string, unknown> | undefined): Record<string, unknown> => {
  const chosen: Record<string, unknown> = {}
  for (const name of ["elicitation", "sampling"]) if (isRecord(declared?.[name])) chosen[name] = declared[name]
  return chosen
}

/** How many rounds of input one call may ask for before the gateway gives up on it. */
const MAX_INPUT_ROUNDS = 8

/** A backend's request for input nesting deeper than the gateway passes on: answered so, never relayed. */
const requestTooDeep: JsonRpcErrorObject = {
  code: ProtocolErrorCode.InvalidParams,
  message: tooDeep("the request for input", "nests")
}

/** What a caller that did not declare a capability answers a request needing it (as the MCP client SDK does). */
const methodNotFound: JsonRpcErrorObject = { code: ProtocolErrorCode.MethodNotFound, message: "Method not found" }

const cannotRelay: JsonRpcErrorObject = {
  code: ProtocolErrorCode.InternalError,
  message: "The backend asked for input in a form the gateway cannot relay."
}

/** The request for input each client capability lets a backend make (docs/mcp.md, "Input requests"). */
const inputMethods: Readonly<Record<string, string>> = {
  elicitation: "elicitation/create",
  sampling: "sampling/createMessage",
  roots: "roots/list"
}

/** The requests for input a backend told of `declared` capabilities may make of the caller. */
const askableWith = (declared: Record<string, unknown>): ReadonlySet<string> =>
  new Set(Object.keys(declared).flatMap((capability) => inputMethods[capability] ?? []))

type Asked =
  | { readonly ok: true; readonly responses: Record<string, unknown> }
  | { readonly ok: false; readonly error: JsonRpcErrorObject }
  /** A request the caller was never said to answer: nothing is asked (docs/mcp.md, "Input requests"). */
  | { readonly ok: false; readonly refused: string }

/**
 * Asks the caller every request of an `input_required` result, in turn; their answers by key, or the
 * first error. Only the requests `askable` names are relayed — those the capabilities declared to the
 * backend allow; a result asking for anything else is refused whole, before anything is asked.
 */
const askAll = async (
  requests: unknown,
  askable: ReadonlySet<string>,
  ask: NonNullable<ToolCallRequest["askCaller"]>
): Promise<Asked> => {
  if (!isRecord(requests)) return { ok: false, error: cannotRelay }
  const asks: Array<{ readonly key: string; readonly method: string; readonly params: unknown }> = []
  for (const [key, request] of Object.entries(requests)) {
    if (!isRecord(request) || typeof request["method"] !== "string") return { ok: false, error: cannotRelay }
    const method = request["method"]
    if (!askable.has(method)) return { ok: false, refused: method }
    asks.push({ key, method, params: request["params"] ?? {} })
  }
  const responses: Record<string, unknown> = {}
  for (const { key, method, params } of asks) {
    const answer = await ask({ method, params })
    if (!answer.ok) return answer
    responses[key] = answer.result
  }
  return { ok: true, responses }
}

/** `input_required` as the caller gets it: the backend's requests and state, nothing else of its `_meta`. */
const inputRequiredResult = (result: Record<string, unknown>): Record<string, unknown> | undefined => {
  const { inputRequests, requestState } = result
  if (inputRequests !== undefined && !isRecord(inputRequests)) return undefined
  if (requestState !== undefined && typeof requestState !== "string") return undefined
  if (inputRequests === undefined && requestState === undefined) return undefined
  return {
    resultType: "input_required",
    ...(inputRequests === undefined ? {} : { inputRequests }),
    ...(requestState === undefined ? {} : { requestState })
  }
}

/** Which part of the caller's request, passed on to the backend, nests too deep (docs/mcp.md, "Request limits"). */
const tooDeepPart = (request: ToolCallRequest): string | undefined => {
  if (nestsDeeperThan(request.arguments, MAX_ARGUMENT_DEPTH)) return "arguments"
  if (nestsDeeperThan(request.multiRound?.inputResponses, MAX_ARGUMENT_DEPTH)) return "inputResponses"
  if (nestsDeeperThan(request.multiRound?.clientCapabilities, MAX_ARGUMENT_DEPTH)) return "clientCapabilities"
  return undefined
}

const errorOf = (from: JsonRpcErrorObject): JsonRpcErrorObject =>
  from.data === undefined
    ? { code: from.code, message: from.message }
    : { code: from.code, message: from.message, data: from.data }

export const ToolCallsLive = Layer.scoped(
  ToolCalls,
  Effect.gen(function* () {
    const backends = yield* Backends
    const engine = yield* PolicyEngine
    const approvals = yield* Approvals
    const { config } = yield* Config
    const http = yield* HttpTools
    const approvalSettings = approvalSettingsOf(config)
    const runtime = yield* Effect.runtime<never>()
    const runFork = Runtime.runFork(runtime)
    const runPromise = Runtime.runPromise(runtime)
    const inFlight = new InFlightCalls()
    const inputs = new InputRelay()
    const denials = new EventLimiter()
    const { tracer } = yield* Tracing

    // A permission removed while calls run: each re-decides under the caller's new view.
    const viewOf = (caller: View["caller"]) =>
      Runtime.runPromiseExit(runtime)(engine.view(caller)).then((exit) =>
        Exit.isSuccess(exit) ? exit.value : undefined
      )
    const unsubscribe = engine.onChange(() => {
      void inFlight.revalidate(viewOf)
    })
    yield* Effect.addFinalizer(() => Effect.sync(unsubscribe))

    const logDenial = (request: ToolCallRequest, tool: ExposedTool, decision: CallDecision) => {
      const { caller } = request.view
      const suppressed = denials.admit(`${caller.subject}|${tool.key}`, Date.now())
      if (suppressed === undefined) return
      runFork(
        securityEvent("policy.call_denied", {
          reason: decision._tag === "Deny" ? decision.reason : "approval_required",
          subject: caller.subject,
          client_id: caller.clientId ?? null,
          backend: backends.index().endpoints[tool.endpoint]?.id,
          tool: tool.original,
          ...(suppressed > 0 ? { suppressed } : {})
        })
      )
    }

    // A backend asking a caller for what it was never said to answer: one warning per backend and method
    // (at most 10 a minute), since any caller's call can make it ask.
    const inputRefusals = new EventLimiter()
    const logRefusedInput = (backend: string, method: string) => {
      const suppressed = inputRefusals.admit(`${backend}|${method}`, Date.now())
      if (suppressed === undefined) return
      runFork(
        Effect.logWarning("backend input request refused").pipe(
          Effect.annotateLogs({
            event: "backend.input_refused",
            backend,
            method: shortText(method),
            ...(suppressed > 0 ? { suppressed } : {})
          })
        )
      )
    }

    // An answer refused by the gateway-wide budget: one warning every 30 s at most, whichever the backend
    // (the budget is one for all), the next one counting the refusals in between.
    const logAnswerDropped = (backend: string) => {
      const suppressed = backends.answers.noteRefusal(Date.now())
      if (suppressed === undefined) return
      runFork(
        Effect.logWarning("backend answer dropped: memory budget reached").pipe(
          Effect.annotateLogs({
            event: "backend.answer_budget_exceeded",
            backend,
            held_bytes: backends.answers.held,
            limit_bytes: config.server.max_answer_bytes_in_flight,
            ...(suppressed > 0 ? { refusals_not_logged: suppressed } : {})
          })
        )
      )
    }

    /**
     * Whether the call may go on under a new view: the same decision. An approved write being executed
     * (`approved`) needs approval by its rule, which it has: only a denial stops it.
     */
    const allows = (decision: CallDecision, approved: boolean) =>
      decision._tag === "Allow" || (approved && decision._tag === "NeedsApproval")
    const stillAllowed =
      (tool: ExposedTool, args: Record<string, unknown> | undefined, approved: boolean) => (view: View) =>
        allows(engine.decide(view, tool, args), approved)

    /** Over the channel: the common case. `approved`: the execution of an approved write (resume). */
    const viaChannel = async (
      request: ToolCallRequest,
      tool: ExposedTool,
      { slot: at, original }: BackendTarget,
      approved = false,
      trace?: TraceHeaders
    ): Promise<ToolCallOutcome> => {
      const slot = backends.slots[at]!
      const backendId = slot.config.id
      const channel = slot.channel
      if (channel === undefined) {
        backends.wanted(at)
        return error(ProtocolErrorCode.InternalError, backendUnavailable(backendId))
      }
      const callTimeout = Duration.toMillis(slot.config.timeouts.call)
      const { onProgress, onLog, logLevel, multiRound, askCaller, clientProfile } = request
      // Members set one by one rather than spread in: this runs on every call.
      const paramsWith = (input: { inputResponses?: unknown; requestState?: unknown } | undefined) => {
        const params: Record<string, unknown> = { name: original }
        if (request.arguments !== undefined) params["arguments"] = request.arguments
        if (input?.inputResponses !== undefined) params["inputResponses"] = input.inputResponses
        if (input?.requestState !== undefined) params["requestState"] = input.requestState
        return params
      }
      let params = paramsWith(multiRound)
      // The input a 2026-07-28 backend may ask for: what the 2026-07-28 caller declared; when the gateway
      // asks a 2025-era caller itself, what that caller declared in `initialize` (its session id), or
      // both kinds when it sent no session id of the gateway's.
      const capabilities =
        askCaller !== undefined
          ? clientProfile === undefined
            ? { elicitation: {}, sampling: {} }
            : capabilitiesOf(clientProfile)
          : multiRound === undefined
            ? undefined
            : inputCapabilities(multiRound.clientCapabilities)
      // A 2025-era backend asks in the middle of the call's stream, on a session that declared the
      // caller's capabilities: relayed to the caller, each time decided again like the call itself.
      const profile = askCaller === undefined ? noProfile : (clientProfile ?? noProfile)
      const onRequest =
        askCaller === undefined || profile === noProfile
          ? undefined
          : async (asked: { readonly method: string; readonly params: unknown }): Promise<InputAnswer> => {
              // Not what the caller declared (an SDK server sends no such request on this session): declined, and
              // logged like a refused `input_required`.
              if (!answers(profile, asked.method)) {
                logRefusedInput(backendId, asked.method)
                return { ok: false, error: methodNotFound }
              }
              if (nestsDeeperThan(asked.params, MAX_ARGUMENT_DEPTH)) return { ok: false, error: requestTooDeep }
              const view = await viewOf(request.view.caller)
              if (view === undefined || !allows(engine.decide(view, tool, request.arguments), approved)) {
                return {
                  ok: false,
                  error: { code: ProtocolErrorCode.InvalidRequest, message: new AccessWithdrawn().message }
                }
              }
              return askCaller(asked)
            }
      const optionsWith = (signal: Cancellation) => {
        const options: { -readonly [K in keyof CallOptions]: CallOptions[K] } = {
          signal,
          timeoutMs: Math.min(callTimeout, request.deadline - Date.now())
        }
        if (onProgress !== undefined) options.onProgress = onProgress
        if (onLog !== undefined) options.onLog = atLeast(logLevel, onLog)
        if (logLevel !== undefined) options.logLevel = logLevel
        if (capabilities !== undefined) options.clientCapabilities = capabilities
        if (onRequest !== undefined) {
          options.profile = profile
          options.onRequest = onRequest
        }
        if (trace !== undefined) options.trace = trace
        return options
      }
      const send = (over: BackendChannel) =>
        inFlight.track(
          request.view.caller,
          request.requestId,
          request.signal,
          (signal) => over.call("tools/call", params, original, optionsWith(signal)),
          stillAllowed(tool, request.arguments, approved)
        )
      // A backend that restarted has forgotten its sessions and ran nothing: once the worker has opened
      // a new session the call is sent again — once — so a backend's restart costs the caller a moment,
      // not an error. When the worker's probe finds the backend up on its session instead, no new one is
      // coming: the refusal is answered at once (already reported, so not probed again).
      const sendOnce = (over: BackendChannel) =>
        send(over).catch(async (failure: unknown) => {
          if (!(failure instanceof ChannelFailure) || !failure.sessionLost) throw failure
          backends.reportFailure(at, failure.message)
          const next = await backends.nextChannel(at, over, request.deadline, request.signal)
          if (next !== undefined) return send(next)
          if (Date.now() >= request.deadline) throw new ChannelFailure("timeout", "the call's deadline passed")
          throw new ChannelFailure("failed", failure.message, false)
        })
      try {
        for (let round = 0; ; round++) {
          const outcome = await sendOnce(slot.channel ?? channel)
          if (!outcome.ok) return { _tag: "Error", error: errorOf(outcome.error), fromBackend: true }
          const result = callResult(outcome.result, namingOf(slot.config), multiRound !== undefined)
          if (result !== undefined && result !== "input") {
            return outcome.release === undefined
              ? { _tag: "Result", result }
              : { _tag: "Result", result, release: outcome.release }
          }
          // Not passed on: nothing of the answer is kept.
          outcome.release?.()
          if (result === "input") {
            // A 2025-era caller is asked by the gateway, which then sends the backend the retry.
            if (askCaller === undefined || round >= MAX_INPUT_ROUNDS) {
              return error(ProtocolErrorCode.InternalError, inputNotRelayed(backendId))
            }
            const answers = await askAll(outcome.result["inputRequests"], askableWith(capabilities ?? {}), askCaller)
            if (!answers.ok && "refused" in answers) {
              logRefusedInput(backendId, answers.refused)
              return error(ProtocolErrorCode.InternalError, inputNotAsked(backendId, answers.refused))
            }
            if (!answers.ok) return { _tag: "Error", error: answers.error }
            // Each leg is a call of its own: decided again under the caller's view now.
            const view = await viewOf(request.view.caller)
            if (view === undefined || !allows(engine.decide(view, tool, request.arguments), approved)) {
              return withdrawnAnswer
            }
            params = paramsWith({ inputResponses: answers.responses, requestState: outcome.result["requestState"] })
            continue
          }
          backends.reportFailure(at, "the backend's answer is not a tool result")
          return error(ProtocolErrorCode.InternalError, backendFailed(backendId))
        }
      } catch (failure) {
        if (failure instanceof AccessWithdrawn) return withdrawnAnswer
        if (!(failure instanceof ChannelFailure)) throw failure
        if (failure.reason === "timeout") return error(requestTimeoutCode, backendTimedOut(backendId))
        if (failure.reason === "over_budget") {
          logAnswerDropped(backendId)
          return error(ProtocolErrorCode.InternalError, answerDropped(backendId))
        }
        if (failure.reason === "failed") {
          if (failure.probe) backends.reportFailure(at, failure.message)
          return error(ProtocolErrorCode.InternalError, backendFailed(backendId))
        }
        // Cancelled: by the request itself, or by the caller's `notifications/cancelled`, which leaves
        // this request to be answered.
        if (request.signal.aborted) return { _tag: "Cancelled" }
        return error(ProtocolErrorCode.InternalError, "The call was cancelled.")
      }
    }

    /**
     * Through the backend's MCP client: for a tool that declares `Mcp-Param-*` headers (SEP-2243), which
     * the client builds from the tool's schema and the arguments.
     */
    const viaClient = async (
      request: ToolCallRequest,
      tool: ExposedTool,
      { slot: at, original }: BackendTarget,
      approved = false,
      trace?: TraceHeaders
    ): Promise<ToolCallOutcome> => {
      const slot = backends.slots[at]!
      const target: ForwardTarget = {
        slot,
        deadline: request.deadline,
        reportFailure: (reason) => backends.reportFailure(at, reason),
        wanted: () => backends.wanted(at),
        reconnected: (previous, signal) =>
          backends.nextChannel(at, previous, request.deadline, signal).then((next) => next !== undefined)
      }
      const params =
        request.arguments === undefined ? { name: original } : { name: original, arguments: request.arguments }
      try {
        const result = await inFlight.track(
          request.view.caller,
          request.requestId,
          request.signal,
          (signal) =>
            forward(target, request.onProgress, abortSignalOf(signal), (client, options) =>
              // The SDK sends `headers` with this request, beside the `Mcp-Param-*` ones it builds.
              client.callTool(params, trace === undefined ? options : { ...options, headers: { ...trace } })
            ),
          stillAllowed(tool, request.arguments, approved)
        )
        const exposed = callResult(result as Record<string, unknown>, namingOf(slot.config), false)
        return exposed === undefined || exposed === "input"
          ? error(ProtocolErrorCode.InternalError, backendFailed(slot.config.id))
          : { _tag: "Result", result: exposed }
      } catch (failure) {
        if (failure instanceof AccessWithdrawn) return withdrawnAnswer
        if (request.signal.aborted) return { _tag: "Cancelled" }
        if (failure instanceof ProtocolError) {
          const data = (failure as { data?: unknown }).data
          const error = errorOf({ code: failure.code, message: failure.message, data })
          // The client's own timeout (-32001) and a closed connection (-32000) are not the backend's answer.
          return failure.code === -32001 || failure.code === -32000
            ? { _tag: "Error", error }
            : { _tag: "Error", error, fromBackend: true }
        }
        return error(ProtocolErrorCode.InternalError, "The call was cancelled.")
      }
    }

    /**
     * An HTTP endpoint's tool: one HTTPS request (the HttpTools service), tracked like a backend call so
     * a policy change or a `notifications/cancelled` cancels it. Invalid arguments are the caller's
     * error (-32602); a failed request is a tool result with `isError: true`.
     */
    const viaHttp = async (
      request: ToolCallRequest,
      tool: ExposedTool,
      { endpoint, spec }: HttpTarget,
      approved = false
    ): Promise<ToolCallOutcome> => {
      try {
        const outcome = await inFlight.track(
          request.view.caller,
          request.requestId,
          request.signal,
          // An answer that arrives after the call was cancelled (the policy withdrew it, the caller cancelled
          // it) is not the call's answer: the cancellation is, whatever the service made of the abort.
          (signal) =>
            runPromise(Effect.either(http.call(endpoint, spec, request.arguments, abortSignalOf(signal)))).then(
              (outcome) => {
                if (signal.aborted) throw signal.reason
                return outcome
              }
            ),
          stillAllowed(tool, request.arguments, approved)
        )
        if (outcome._tag === "Left") return error(ProtocolErrorCode.InvalidParams, outcome.left.message)
        const result = withoutReservedMeta(outcome.right as Record<string, unknown> & { _meta?: unknown })
        return { _tag: "Result", result }
      } catch (failure) {
        if (failure instanceof AccessWithdrawn) return withdrawnAnswer
        if (request.signal.aborted) return { _tag: "Cancelled" }
        // Cancelled by the caller's `notifications/cancelled` (the service's own failures are results).
        return error(ProtocolErrorCode.InternalError, "The call was cancelled.")
      }
    }

    /** Runs `tool` on its target: a backend's tool (over the channel, or the MCP client for `Mcp-Param-*`) or an HTTP tool. */
    const run = (
      request: ToolCallRequest,
      tool: ExposedTool,
      approved = false,
      trace?: TraceHeaders
    ): Promise<ToolCallOutcome> => {
      const target = tool.target
      if (target._tag === "Http") return viaHttp(request, tool, target, approved)
      if (target._tag === "Backend") {
        return tool.paramHeaders.length > 0
          ? viaClient(request, tool, target, approved, trace)
          : viaChannel(request, tool, target, approved, trace)
      }
      return Promise.resolve(unknownTool(request.name))
    }

    /** The configuration a call of `tool` runs under, which an approval of it is bound to. */
    const sourceOf = (tool: ExposedTool): ApprovalSource | undefined => {
      const target = tool.target
      const member =
        target._tag === "Http"
          ? ({ kind: "http", endpoint: target.endpoint, spec: target.spec } as const)
          : target._tag === "Backend"
            ? ({ kind: "backend", backend: backends.slots[target.slot]!.config } as const)
            : undefined
      if (member === undefined || tool.group === undefined) return member
      const memberTool = target._tag === "Http" ? target.spec.name : target._tag === "Backend" ? target.original : ""
      return { kind: "tool_group", group: tool.group, member, memberTool }
    }
    const sourceHash = (tool: ExposedTool) => {
      const source = sourceOf(tool)
      return source === undefined ? "" : sourceHashOf(source, tool)
    }

    /**
     * One execution of a tool with `args`, decided by the caller (a gateway tool). Only the
     * arguments given go to the backend: nothing else of the gateway tool's own request (its
     * `inputResponses`, `requestState`, the caller's answers to input requests) — an approved write runs
     * with exactly what was reviewed, and a backend asking for input mid-way is not relayed.
     */
    const execute = (request: ToolCallRequest, tool: ExposedTool, args: Record<string, unknown>) => {
      const sent: ToolCallRequest = {
        view: request.view,
        name: tool.key,
        arguments: args,
        requestId: request.requestId,
        signal: request.signal,
        deadline: request.deadline,
        ...(request.onProgress === undefined ? {} : { onProgress: request.onProgress }),
        ...(request.onLog === undefined ? {} : { onLog: request.onLog }),
        ...(request.logLevel === undefined ? {} : { logLevel: request.logLevel })
      }
      const deep = tooDeepPart(sent)
      if (deep !== undefined) return Promise.resolve(error(ProtocolErrorCode.InvalidParams, tooDeep(deep)))
      // A gateway tool builds its own answer from this one: what the backend's answer held is given back now.
      // Traced like any backend call (its W3C trace context sent along), counted by the gateway tool's call.
      const backend = backends.index().endpoints[tool.endpoint]?.id ?? "gateway"
      const outcome = spanBackendCall(tracer, request.span, backend, tool, (trace) => run(sent, tool, true, trace))
      return outcome.then((done) => {
        if (done._tag !== "Result" || done.release === undefined) return done
        done.release()
        return { _tag: "Result", result: done.result } as const
      })
    }

    const runner: GatewayToolRunner = {
      index: () => backends.index(),
      endpoint: (index) => backends.index().endpoints[index],
      sourceHash,
      decide: (view, tool, args) => engine.decide(view, tool, args),
      reachable: (tool) =>
        tool.target._tag === "Http" ||
        (tool.target._tag === "Backend" && backends.slots[tool.target.slot]?.channel !== undefined),
      execute
    }

    /** NeedsApproval: the write is kept as a pending approval (or found again by its operation id); nothing is sent. */
    const askApproval = (
      request: ToolCallRequest,
      tool: ExposedTool,
      policy: Extract<CallDecision, { _tag: "NeedsApproval" }>["policy"]
    ): Promise<ToolCallOutcome> => {
      const endpoint = backends.index().endpoints[tool.endpoint]
      // A write needing approval was allowed by the caller's Grant, so they are someone here; deny on doubt.
      const requesterId = request.view.grant?.user.id
      if (requesterId === undefined || endpoint === undefined) return Promise.resolve(unknownTool(request.name))
      return Runtime.runPromise(runtime)(
        approvals.request(
          {
            caller: request.view.caller,
            requesterId,
            backend: endpoint.id,
            tool: tool.original,
            exposedName: tool.key,
            sourceHash: sourceHash(tool),
            arguments: request.arguments ?? {},
            policy
          },
          approvalSettings
        )
      )
        .then((outcome) => {
          if (tracer !== undefined && outcome._tag === "Pending") {
            closeSpan(
              openSpan(tracer, "approval.request", request.span, "internal", { "gateway.approval.id": outcome.row.id })
            )
          }
          return outcome
        })
        .then((outcome) => ({
          _tag: "Result",
          result:
            outcome._tag === "Pending"
              ? pendingResult(outcome.row, approvalUrlOf(config.server.public_url, outcome.row.id), outcome.created)
              : requestRefusal(outcome)
        }))
    }

    return {
      inFlight,
      inputs,
      call: (request) => {
        const tool = backends.index().toolByName.get(request.name)
        if (tool === undefined) return Promise.resolve(unknownTool(request.name))
        const decision = engine.decide(request.view, tool, request.arguments)
        observeDecision(tracer, request.span, tool, decision)
        const backend = backends.index().endpoints[tool.endpoint]?.id ?? "gateway"
        if (decision._tag === "Deny") {
          logDenial(request, tool, decision)
          countCall(backend, tool, "denied")
          return Promise.resolve(unknownTool(request.name))
        }
        const deep = tooDeepPart(request)
        if (deep !== undefined) {
          countCall(backend, tool, "invalid")
          return Promise.resolve(error(ProtocolErrorCode.InvalidParams, tooDeep(deep)))
        }
        if (decision._tag === "NeedsApproval") {
          countCall(backend, tool, "approval_required")
          return askApproval(request, tool, decision.policy)
        }
        if (tool.gateway !== undefined) return tool.gateway.call(request, runner)
        return observeBackendCall(tracer, request.span, backend, tool, (trace) => run(request, tool, false, trace))
      }
    }
  })
)
