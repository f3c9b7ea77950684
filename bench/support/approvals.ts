import { type Agent, request } from "node:http"
import { Clock, Effect, Layer, Logger, LogLevel } from "effect"
import { startSignIn } from "../../src/auth/browser-session.js"
import { loadConfig } from "../../src/config/load.js"
import { parseConfigKey } from "../../src/crypto/config-key.js"
import { ensureDevelopmentAccess } from "../../src/demo/dev-access.js"
import { baseLayer } from "../../src/runtime/base.js"
import { grantAccess, grantAccessTo } from "../../test/support/grants.js"
import type { Deployment } from "./gateway.js"
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
  Effect.runPromise(
    Effect.scoped(
      Effect.gen(function* () {
        const { config } = yield* loadConfig(deployment.configFile, { GATEWAY_CONFIG_KEY: deployment.configKey })
        const key = yield* parseConfigKey(deployment.configKey)
        const base = yield* Layer.build(baseLayer(config, key))
        return yield* Effect.gen(function* () {
          const developerId = yield* ensureDevelopmentAccess(config)
          yield* grantAccessTo(developerId, access)
          const reviewer = yield* grantAccess([], { roles: ["approver"] })
          const signIn = yield* startSignIn(reviewer.userId, yield* Clock.currentTimeMillis)
          return { cookie: `gw_session=${signIn.token}` }
        }).pipe(Effect.provide(base))
      })
    ).pipe(Logger.withMinimumLogLevel(LogLevel.Error))
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

export interface Answer {
  readonly status: number
  readonly body: string
  readonly ms: number
}

/** One request over `agent` (keep-alive, as a browser keeps its connection), timed with `process.hrtime`. */
export const send = (
  agent: Agent,
  method: "GET" | "POST",
  url: string,
  headers: Readonly<Record<string, string>>,
  body?: string
) =>
  new Promise<Answer>((resolve, reject) => {
    const started = process.hrtime.bigint()
    const length = body === undefined ? {} : { "content-length": String(Buffer.byteLength(body)) }
    const req = request(url, { method, agent, headers: { ...headers, ...length } }, (res) => {
      const chunks: Buffer[] = []
      res.on("data", (chunk: Buffer) => chunks.push(chunk))
      res.on("end", () =>
        resolve({
          status: res.statusCode ?? 0,
          body: Buffer.concat(chunks).toString("utf8"),
          ms: Number(process.hrtime.bigint() - started) / 1e6
        })
      )
      res.on("error", reject)
    })
    req.on("error", reject)
    req.end(body)
  })

/** A hidden field of the review page's form (its anti-CSRF token, the intent shown). */
export const formField = (html: string, name: string): string | undefined =>
  html.match(new RegExp(`name="${name}" value="([^"]*)"`))?.[1]
