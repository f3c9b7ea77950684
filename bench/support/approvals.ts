import { Clock, Effect } from "effect"
import { startSignIn } from "../../src/auth/browser-session.js"
import { Config } from "../../src/config/service.js"
import { ensureDevelopmentAccess } from "../../src/demo/dev-access.js"
import { grantAccess, grantAccessTo } from "../../test/support/grants.js"
import type { Deployment } from "./gateway.js"
import { inDeploymentStore } from "./grant.js"
import { modernRequest } from "./json-rpc.js"
import { backendUrl } from "./mcp-backend.js"
import type { Target } from "./mcp-measure.js"

/**
 * The bench backend's `echo` behind three backend entries (three ports of one backend process), so one
 * gateway serves the same tool three ways: `ops__echo`, a write with an approval rule (operation id at
 * `/operation_id`, one reviewer); `plain__echo`, the same write without one; `reader__echo`, a read.
 */
export const approvalBackends = (ports: readonly [number, number, number]) => {
  const entry = (id: string, port: number, rule: Record<string, unknown>) => ({
    id,
    url: backendUrl(port),
    allow_insecure_http: true,
    required: true,
    tool_rules: [{ tools: ["echo"], ...rule }]
  })
  return [
    entry("ops", ports[0], { write: true, approval: { operation_id_argument: "/operation_id" } }),
    entry("plain", ports[1], { write: true }),
    entry("reader", ports[2], {})
  ]
}

const access = ["ops", "plain", "reader"].map((endpoint) => ({
  endpoint_id: endpoint,
  tools: ["echo"],
  allow_write_requests: true
}))

/**
 * Before the gateway starts, through the policy writes an administrator makes, in the deployment's own
 * store: the development user (`gateway dev-token` signs for it) may call the three `echo`s; a second
 * person holds the `approver` role and has a browser sign-in (the review page's cookie).
 */
export const arrangeApprovalPeople = (deployment: Deployment): Promise<{ readonly cookie: string }> =>
  inDeploymentStore(
    deployment,
    Effect.gen(function* () {
      const { config } = yield* Config
      const developerId = yield* ensureDevelopmentAccess(config)
      yield* grantAccessTo(developerId, access)
      const reviewer = yield* grantAccess([], { roles: ["approver"] })
      const signIn = yield* startSignIn(reviewer.userId, yield* Clock.currentTimeMillis)
      return { cookie: `gw_session=${signIn.token}` }
    })
  )

/** A `tools/call` as the client SDK 2.x sends it (2026-07-28), with the caller's token. */
export const toolCall = (mcpUrl: string, token: string, name: string, args: Record<string, unknown>): Target => {
  const { body, headers } = modernRequest("tools/call", { name, arguments: args }, name)
  return { url: mcpUrl, body, headers: { ...headers, authorization: `Bearer ${token}` } }
}

export const toolsList = (mcpUrl: string, token: string): Target => {
  const { body, headers } = modernRequest("tools/list", {})
  return { url: mcpUrl, body, headers: { ...headers, authorization: `Bearer ${token}` } }
}

/** A hidden field of the review page's form (its anti-CSRF token, the intent shown). */
export const formField = (html: string, name: string): string | undefined =>
  html.match(new RegExp(`name="${name}" value="([^"]*)"`))?.[1]
