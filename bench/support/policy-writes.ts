import { randomBytes } from "node:crypto"
import { Clock, Context, Effect, Exit, Redacted, Schema, Scope } from "effect"
import { adminResource } from "../../src/admin/resource.js"
import { devSessionPrefix } from "../../src/bearer/caller.js"
import { Config } from "../../src/config/service.js"
import { Signer } from "../../src/crypto/signer.js"
import { Permissions } from "../../src/policy/permissions.js"
import { GroupRepo } from "../../src/store/groups.js"
import { grantAccess } from "../../test/support/grants.js"
import { storageOf } from "./auth-gateway.js"
import { newDeployment, removeDeployment, startGateway, waitServing } from "./gateway.js"
import { inDeploymentStore } from "./grant.js"
import { percentile } from "./stats.js"

/**
 * The permission object of one large group, as the trial wrote it: 256 access entries × 4 resource
 * rules × 12 allowed values (about 200 KB of JSON as stored), within every documented cap and the 1 MiB body limit.
 */
export const largePermissions = Schema.decodeUnknownSync(Permissions)({
  access: Array.from({ length: 256 }, (_, entry) => ({
    endpoint_id: `b${entry % 10}`,
    tools: [`tool_${entry}`, `tool_${entry}_b`],
    allow_write_requests: entry % 2 === 0,
    resource_rules: Array.from({ length: 4 }, (_, rule) => ({
      argument: `/account/field_${rule}`,
      allowed_values: Array.from({ length: 12 }, (_, value) => `${entry}.${rule}.${value}`)
    }))
  }))
})

export interface WriteFigures {
  /** One small write at a time (an empty group created, a group disabled and enabled again), ms each. */
  readonly writes: ReadonlyArray<number>
  /** `/healthz` answered while 20 such writes ran back to back, ms each. */
  readonly healthz: ReadonlyArray<number>
  /** The writes of that run, ms each. */
  readonly loadedWrites: ReadonlyArray<number>
}

const SEQUENTIAL = 30
const UNDER_LOAD = 20

/**
 * A spawned gateway (`serve --dev`, on `kind`) whose store holds `largeGroups` large permission
 * groups; its Management API takes small writes (an administrator token signed with the deployment's
 * development key) while `/healthz` is asked every 2 ms.
 */
export const measurePolicyWrites = async (
  entry: string,
  kind: "sqlite" | "postgres",
  largeGroups: number
): Promise<WriteFigures> => {
  const scope = Effect.runSync(Scope.make())
  const storage =
    kind === "sqlite"
      ? undefined
      : await Effect.runPromise(
          Effect.map(Scope.extend(storageOf("postgres", ""), scope), (stored) => ({
            type: "postgres",
            url: stored.type === "postgres" ? Redacted.value(stored.url) : ""
          }))
        )
  const deployment = await newDeployment({}, storage === undefined ? {} : { storage })
  const { token, adminUrl } = await inDeploymentStore(
    deployment,
    Effect.gen(function* () {
      const { config } = yield* Config
      const admin = yield* grantAccess([], { roles: ["admin"] })
      const groups = yield* GroupRepo
      const at = new Date(yield* Clock.currentTimeMillis)
      for (let group = 0; group < largeGroups; group++) {
        yield* groups.insertPermissionGroup({
          name: `large ${group}`,
          enabled: true,
          permissions: largePermissions,
          sourceGroups: [],
          at
        })
      }
      const signer = yield* Effect.map(Effect.context<Signer>(), (context) => Context.get(context, Signer))
      const token = yield* signer.sign(
        {
          scope: "gateway:admin",
          client_id: "bench",
          sid: `${devSessionPrefix}${randomBytes(9).toString("base64url")}`
        },
        { issuer: config.auth.issuer, audience: adminResource(config), subject: admin.userId, expiresInSeconds: 600 }
      )
      return { token, adminUrl: adminResource(config) }
    })
  )
  const gateway = startGateway(entry, deployment, { dev: true })
  try {
    await waitServing(gateway)
    const send = async (method: string, path: string, body: unknown, headers: Record<string, string> = {}) => {
      const started = performance.now()
      const response = await fetch(`${adminUrl}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...headers },
        body: JSON.stringify(body)
      })
      const answer = (await response.json()) as Record<string, unknown>
      if (!response.ok) throw new Error(`${method} ${path} answered ${response.status}: ${JSON.stringify(answer)}`)
      return { ms: performance.now() - started, answer }
    }
    // One small group is toggled; the others are created empty.
    const toggled = (await send("POST", "/api/v1/identities/groups", { name: "toggled" })).answer
    let revision = String(toggled["revision"])
    let created = 0
    let enabled = true
    const smallWrite = async () => {
      created += 1
      if (created % 2 === 1) return (await send("POST", "/api/v1/identities/groups", { name: `small ${created}` })).ms
      enabled = !enabled
      const written = await send(
        "PUT",
        `/api/v1/identities/groups/${String(toggled["id"])}`,
        { enabled },
        { "if-match": `"${revision}"` }
      )
      revision = String(written.answer["revision"])
      return written.ms
    }
    await smallWrite()
    const writes: Array<number> = []
    for (let n = 0; n < SEQUENTIAL; n++) writes.push(await smallWrite())

    const healthz: Array<number> = []
    let writing = true
    const probe = (async () => {
      while (writing) {
        const started = performance.now()
        const response = await fetch(`${deployment.baseUrl}/healthz`)
        await response.arrayBuffer()
        healthz.push(performance.now() - started)
        await new Promise((resume) => setTimeout(resume, 2))
      }
    })()
    const loadedWrites: Array<number> = []
    for (let n = 0; n < UNDER_LOAD; n++) loadedWrites.push(await smallWrite())
    writing = false
    await probe
    return { writes, healthz, loadedWrites }
  } finally {
    await gateway.stop()
    removeDeployment(deployment)
    await Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

export const p95 = (values: ReadonlyArray<number>) => percentile(values, 95)
export const p99 = (values: ReadonlyArray<number>) => percentile(values, 99)
