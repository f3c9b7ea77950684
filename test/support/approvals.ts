import type { McpServer } from "@modelcontextprotocol/server"
import { Clock, Effect } from "effect"
import * as z from "zod/v4"
import { reviewCsrfOf } from "../../src/approvals/review/endpoints.js"
import { startSignIn } from "../../src/auth/browser-session.js"
import { type AccessInput, grantAccess, grantAccessTo } from "./grants.js"
import { startBackend, type TestBackend } from "./mcp-backends.js"
import { connectClient } from "./mcp-clients.js"
import { startTestGateway, type TestGateway, type TestGatewayOptions } from "./mcp-gateway.js"

/**
 * Write approvals end to end: a real backend `ops` whose `deploy` write counts every execution (so a
 * test proves what reached it, and how often) and whose read-only `deploy_status` reports what it saw
 * for an operation id; the real gateway with the stored policy; people with real permission groups and
 * real browser sign-ins (the review page's cookie).
 */
export interface OpsBackend extends TestBackend {
  /** Executions of `deploy`, by operation id (or `-` without one). */
  readonly executions: Map<string, number>
  /** `delayMs`: how long `deploy` takes before answering (0: at once). */
  readonly control: { delayMs: number }
  /** Every JSON-RPC body the backend received, as text. */
  readonly received: Array<string>
}

export const startOps = async (): Promise<OpsBackend> => {
  const executions = new Map<string, number>()
  const state = { delayMs: 0 }
  const register = (server: McpServer) => {
    server.registerTool(
      "deploy",
      {
        inputSchema: z.object({
          operation_id: z.string().optional(),
          environment: z.string().optional(),
          version: z.string().optional()
        })
      },
      async ({ operation_id, environment, version }) => {
        const key = operation_id ?? "-"
        executions.set(key, (executions.get(key) ?? 0) + 1)
        if (state.delayMs > 0) await new Promise((done) => setTimeout(done, state.delayMs))
        return {
          content: [{ type: "text" as const, text: `deployed ${version ?? "?"} to ${environment ?? "?"}` }],
          structuredContent: { deployed: version ?? null, environment: environment ?? null }
        }
      }
    )
    server.registerTool(
      "deploy_status",
      {
        inputSchema: z.object({
          operation_id: z.string(),
          environment: z.string().optional(),
          version: z.string().optional()
        }),
        annotations: { readOnlyHint: true }
      },
      async ({ operation_id }) => ({
        content: [{ type: "text" as const, text: `status of ${operation_id}` }],
        structuredContent: { operation_id, executions: executions.get(operation_id) ?? 0 }
      })
    )
  }
  const received: Array<string> = []
  const backend = await startBackend("ops", register, {
    intercept: (body) => {
      received.push(JSON.stringify(body))
      return undefined
    }
  })
  return Object.assign(backend, { executions, control: state, received })
}

/** The approval rule the tests start from; `approval` overrides its keys. */
export const opsBackendConfig = (
  url: string,
  approval: Record<string, unknown> = {},
  extra: Record<string, unknown> = {}
) => ({
  id: "ops",
  url,
  allow_insecure_http: true,
  required: true,
  timeouts: { call: "2s" },
  tool_rules: [
    { tools: ["deploy_status"] },
    {
      tools: ["deploy"],
      write: true,
      approval: {
        operation_id_argument: "/operation_id",
        status_tool: "deploy_status",
        risk_rules: [
          { resources: [{ argument: "/environment", allowed_values: ["production"] }], required_approvals: 2 }
        ],
        ...approval
      }
    }
  ],
  ...extra
})

export const opsAccess: ReadonlyArray<AccessInput> = [
  { endpoint_id: "ops", tools: ["deploy", "deploy_status"], allow_write_requests: true }
]

export const startApprovalGateway = (
  ops: OpsBackend,
  approval: Record<string, unknown> = {},
  options: TestGatewayOptions = {}
) =>
  startTestGateway({
    policy: "store",
    ...options,
    patch: { backends: [opsBackendConfig(ops.url, approval)], ...options.patch }
  })

/** A person who may call the ops tools (and, with `approver`, review): their id and an access token. */
export const person = async (
  gateway: TestGateway,
  options: { readonly approver?: boolean; readonly tools?: boolean } = {}
) => {
  const roles = options.approver === true ? ["approver"] : []
  const { userId } = await gateway.run(grantAccess(options.tools === false ? [] : opsAccess, { roles }))
  return { userId, token: await gateway.token({ subject: userId }) }
}

/** Makes an existing person an approver (a second permission group with the role). */
export const makeApprover = (gateway: TestGateway, userId: string) =>
  gateway.run(grantAccessTo(userId, [], { roles: ["approver"] }))

/** A browser sign-in of `userId`, as its cookie header. */
export const browserOf = async (gateway: TestGateway, userId: string) => {
  const signIn = await gateway.run(Effect.flatMap(Clock.currentTimeMillis, (now) => startSignIn(userId, now)))
  return { cookie: `gw_session=${signIn.token}`, csrf: reviewCsrfOf(signIn.token) }
}

export type ToolResult = {
  readonly content?: ReadonlyArray<{ readonly type: string; readonly text?: string }>
  readonly structuredContent?: Record<string, unknown>
  readonly isError?: boolean
}

/** One tools/call through a real MCP client. */
export const callTool = async (gateway: TestGateway, token: string, name: string, args: Record<string, unknown>) => {
  const client = await connectClient(gateway.mcpUrl, token)
  try {
    return (await client.callTool({ name, arguments: args })) as ToolResult
  } finally {
    await client.close()
  }
}

export const deploy = (gateway: TestGateway, token: string, args: Record<string, unknown>) =>
  callTool(gateway, token, "ops__deploy", args)

export const statusOf = (gateway: TestGateway, token: string, approvalId: string, queryUpstream?: boolean) =>
  callTool(gateway, token, "gateway_approval_status", {
    approval_id: approvalId,
    ...(queryUpstream === undefined ? {} : { query_upstream: queryUpstream })
  })

export const resume = (gateway: TestGateway, token: string, approvalId: string) =>
  callTool(gateway, token, "gateway_resume_approval", { approval_id: approvalId })

/** The review page of one approval as a reviewer's browser gets it. */
export const reviewPage = (gateway: TestGateway, cookie: string, approvalId: string) =>
  fetch(`${gateway.baseUrl}/sso/approvals/${approvalId}`, { headers: { cookie }, redirect: "manual" })

/** A hidden field of a review page's form (its anti-CSRF token, the intent shown). */
export const field = (html: string, name: string) => html.match(new RegExp(`name="${name}" value="([^"]*)"`))?.[1]

/**
 * Presses a button of the review page the way a browser does: reads the page (its anti-CSRF token and,
 * to approve, the intent shown), then posts the form from the gateway's origin.
 */
export const review = async (
  gateway: TestGateway,
  cookie: string,
  approvalId: string,
  action: "approve" | "reject" | "revoke",
  overrides: Record<string, string> = {}
) => {
  const page = await (await reviewPage(gateway, cookie, approvalId)).text()
  const form = new URLSearchParams({
    csrf: field(page, "csrf") ?? "",
    // A button the page does not offer is still posted (a hand-made form): the server decides.
    intent: field(page, "intent") ?? "",
    ...overrides
  })
  return fetch(`${gateway.baseUrl}/sso/approvals/${approvalId}/${action}`, {
    method: "POST",
    headers: { cookie, origin: gateway.baseUrl, "content-type": "application/x-www-form-urlencoded" },
    body: form,
    redirect: "manual"
  })
}

export const approvalIdOf = (result: ToolResult) => String(result.structuredContent?.["approval_id"])
