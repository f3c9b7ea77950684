import { Effect, Layer, Runtime } from "effect"
import { approvalUrlOf, RESUME_TOOL, refusal, STATUS_TOOL, statusResult } from "../../approvals/answers.js"
import { APPROVAL_ID } from "../../approvals/intent.js"
import { Approvals } from "../../approvals/service.js"
import type { ToolRule } from "../../config/schema.js"
import type { LoadedConfig } from "../../config/service.js"
import { Config } from "../../config/service.js"
import { EventLimiter } from "../../events/security-log.js"
import { isRecord } from "../../json.js"
import { endpointsOf } from "../../policy/tool.js"
import { noManagedSources } from "../../sources/schema.js"
import type { ApprovalRow } from "../../store/approvals.js"
import { type GatewayTool, type GatewayToolRunner, GatewayTools } from "../catalog/gateway-tools.js"
import type { ExposedTool } from "../catalog/index.js"
import type { ToolCallOutcome, ToolCallRequest } from "./tool-calls.js"

const result = (value: Record<string, unknown>): ToolCallOutcome => ({ _tag: "Result", result: value })

const approvalIdOf = (args: Record<string, unknown> | undefined): string | undefined => {
  const id = args?.["approval_id"]
  return typeof id === "string" && APPROVAL_ID.test(id) ? id : undefined
}

const unexpectedKeys = (args: Record<string, unknown> | undefined, allowed: ReadonlyArray<string>) =>
  Object.keys(args ?? {}).filter((key) => !allowed.includes(key))

const invalidArguments = (message: string) => result(refusal("invalid_arguments", message))
const notFound = result(refusal("approval_not_found", "No approval with this id was requested by you."))

/**
 * The tool an approval was given for, as the catalog has it now — on the endpoint that decided it (its
 * backend or HTTP endpoint, or its tool group: the row's `backend`) — and whether its configuration is
 * the one the approval was given under.
 */
const toolOf = (runner: GatewayToolRunner, row: ApprovalRow) => {
  const tool = runner.index().toolByName.get(row.exposed_name)
  const endpoint = tool === undefined ? undefined : runner.endpoint(tool.endpoint)
  if (tool === undefined || endpoint === undefined || endpoint.id !== row.backend || tool.original !== row.tool) {
    return undefined
  }
  return { tool, unchanged: runner.sourceHash(tool) === row.source_hash }
}

/**
 * The endpoints (`endpointsOf` indices) with tools whose calls can need approval: an endpoint with an
 * approval rule, or a tool group with one or with a member endpoint that has one.
 */
export const endpointsWithApprovals = (loaded: LoadedConfig): ReadonlyArray<number> => {
  const ruled = (rules: ReadonlyArray<ToolRule>) => rules.some((rule) => rule.approval !== undefined)
  const endpoints = endpointsOf(loaded)
  const sources = loaded.sources ?? noManagedSources
  const withRules = new Set<string>([
    ...loaded.config.backends.flatMap((backend) => (ruled(backend.tool_rules) ? [backend.id] : [])),
    ...sources.http.flatMap((http) => (ruled(http.tool_rules) ? [http.id] : []))
  ])
  for (const group of sources.toolGroups) {
    if (ruled(group.tool_rules) || group.members.some((member) => withRules.has(member.endpoint))) {
      withRules.add(group.id)
    }
  }
  return endpoints.flatMap((endpoint, index) => (withRules.has(endpoint.id) ? [index] : []))
}

/**
 * The two tools the gateway provides for write approvals (docs/approvals.md, "Tools"):
 * `gateway_approval_status` (read-only: where an approval stands, its cached result, and on request the
 * backend's own status tool) and `gateway_resume_approval` (executes an approved write once). Both act
 * only on the caller's own approvals. They are shown to a caller who may send writes to an endpoint
 * whose tools can need approval (`endpointsWithApprovals`).
 */
export const GatewayToolsLive = Layer.effect(
  GatewayTools,
  Effect.gen(function* () {
    const approvals = yield* Approvals
    const loaded = yield* Config
    const { config } = loaded
    const runtime = yield* Effect.runtime<never>()
    const run = Runtime.runPromise(runtime)
    const withApprovals = endpointsWithApprovals(loaded)
    if (withApprovals.length === 0) return []
    const allowed = (view: Parameters<GatewayTool["allowed"]>[0]) => withApprovals.some((index) => view.writesTo(index))
    const urlOf = (id: string) => approvalUrlOf(config.server.public_url, id)
    // Asking a backend's status tool costs the backend a call: at most 30 a minute per caller.
    const upstreamQueries = new EventLimiter(30, 60_000)

    const upstreamObservation = async (
      request: ToolCallRequest,
      runner: GatewayToolRunner,
      row: ApprovalRow,
      found: { readonly tool: ExposedTool; readonly unchanged: boolean } | undefined
    ): Promise<Record<string, unknown>> => {
      if (found === undefined || !found.unchanged) {
        return { upstream_observation: null, upstream_error: "the tool's configuration changed since the approval" }
      }
      const name = found.tool.approval?.status_tool
      const statusTool =
        name === undefined
          ? undefined
          : runner.index().tools.find((tool) => tool.endpoint === found.tool.endpoint && tool.original === name)
      if (statusTool === undefined) {
        return { upstream_observation: null, upstream_error: "no status tool is configured for this tool" }
      }
      if (upstreamQueries.admit(`${row.issuer}|${row.subject}`, Date.now()) === undefined) {
        return { upstream_observation: null, upstream_error: "too many upstream status queries; try again in a minute" }
      }
      const intent = await run(approvals.intentOf(row))
      if (intent === undefined)
        return { upstream_observation: null, upstream_error: "the saved request cannot be read" }
      if (runner.decide(request.view, statusTool, intent.arguments)._tag !== "Allow") {
        return { upstream_observation: null, upstream_error: "you may not call the status tool with these arguments" }
      }
      const outcome = await runner.execute(request, statusTool, intent.arguments)
      if (
        outcome._tag === "Result" &&
        isRecord(outcome.result["structuredContent"]) &&
        outcome.result["isError"] !== true
      ) {
        return { upstream_observation: outcome.result["structuredContent"] }
      }
      return { upstream_observation: null, upstream_error: "the status tool did not answer with structured content" }
    }

    const status: GatewayTool = {
      definition: {
        name: STATUS_TOOL,
        title: "Write approval status",
        description:
          "Where one of your write approvals stands: state, quorum, voters, deadlines and, once executed, its cached result. With query_upstream: true, also asks the backend's status tool with the saved arguments. Never executes anything.",
        inputSchema: {
          type: "object",
          properties: {
            approval_id: { type: "string", description: "The approval_id the write answered with." },
            query_upstream: { type: "boolean", description: "Also ask the backend's own status tool." }
          },
          required: ["approval_id"],
          additionalProperties: false
        },
        annotations: { readOnlyHint: true, idempotentHint: true }
      },
      allowed,
      call: async (request, runner) => {
        const extra = unexpectedKeys(request.arguments, ["approval_id", "query_upstream"])
        if (extra.length > 0) return invalidArguments(`Unknown argument "${extra[0]}".`)
        const id = approvalIdOf(request.arguments)
        if (id === undefined) return invalidArguments("approval_id must be the approval_id a write answered with.")
        const query = request.arguments?.["query_upstream"]
        if (query !== undefined && typeof query !== "boolean")
          return invalidArguments("query_upstream must be a boolean.")
        const detail = await run(approvals.status(request.view.caller, id))
        if (detail === undefined) return notFound
        const { row, votes } = detail
        const found = toolOf(runner, row)
        const unchanged = found?.unchanged === true
        const extraFields: Record<string, unknown> = { configuration_unchanged: unchanged }
        if (row.state === "completed") {
          extraFields["result"] = unchanged ? ((await run(approvals.resultOf(row))) ?? null) : null
        }
        if (query === true) Object.assign(extraFields, await upstreamObservation(request, runner, row, found))
        return result(statusResult(row, votes, urlOf(row.id), extraFields))
      }
    }

    const resume: GatewayTool = {
      definition: {
        name: RESUME_TOOL,
        title: "Execute an approved write",
        description:
          "Executes one of your approved writes exactly once, with the arguments the reviewers approved (not new ones). Call it deliberately, after gateway_approval_status says approved.",
        inputSchema: {
          type: "object",
          properties: { approval_id: { type: "string", description: "The approval_id the write answered with." } },
          required: ["approval_id"],
          additionalProperties: false
        },
        annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false }
      },
      allowed,
      call: async (request, runner) => {
        const extra = unexpectedKeys(request.arguments, ["approval_id"])
        if (extra.length > 0) return invalidArguments(`Unknown argument "${extra[0]}".`)
        const id = approvalIdOf(request.arguments)
        if (id === undefined) return invalidArguments("approval_id must be the approval_id a write answered with.")
        const claim = await run(approvals.claim(request.view.caller, id))
        if (claim._tag === "NotFound") return notFound
        if (claim._tag === "NotApproved") {
          return result(
            refusal(
              "approval_not_approved",
              `Approval ${id} is ${claim.row.state}: only an approved write within its deadline can be executed, once.`
            )
          )
        }
        const { row, intent } = claim
        const found = toolOf(runner, row)
        const stopBefore = async (error: string, message: string) => {
          await run(approvals.notSent(row))
          return result(refusal(error, message))
        }
        if (found === undefined || !found.unchanged) {
          return stopBefore(
            "approval_configuration_changed",
            "The tool or its approval rule changed since this write was approved; it was not executed."
          )
        }
        if (runner.decide(request.view, found.tool, intent.arguments)._tag === "Deny") {
          return stopBefore(
            "approval_not_allowed",
            "You may no longer call this tool with these arguments; it was not executed."
          )
        }
        if (!runner.reachable(found.tool)) {
          return stopBefore(
            "backend_unavailable",
            `Backend "${row.backend}" is not connected; nothing was sent. Try again later.`
          )
        }
        const outcome = await runner.execute(request, found.tool, intent.arguments)
        if (outcome._tag === "Result") {
          await run(approvals.completed(row, outcome.result))
          return outcome
        }
        if (outcome._tag === "Error" && outcome.fromBackend === true) {
          await run(approvals.completed(row, { error: outcome.error }))
          return outcome
        }
        await run(approvals.unknownOutcome(row, outcome._tag === "Cancelled" ? "cancelled" : outcome.error.message))
        return outcome
      }
    }
    return [status, resume]
  })
)
