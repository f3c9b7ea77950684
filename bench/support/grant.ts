import { Effect, Layer, Logger, LogLevel, Option, Schema } from "effect"
import { loadConfig } from "../../src/config/load.js"
import { Config } from "../../src/config/service.js"
import { parseConfigKey } from "../../src/crypto/config-key.js"
import { DEVELOPER_USERNAME, ensureDevelopmentAccess } from "../../src/demo/dev-access.js"
import { Permissions } from "../../src/policy/permissions.js"
import { PolicyWrites } from "../../src/policy/writes.js"
import { baseLayer } from "../../src/runtime/base.js"
import type { BaseServices } from "../../src/runtime/generation-layer.js"
import { MembershipRepo } from "../../src/store/memberships.js"
import { UserRepo } from "../../src/store/users.js"
import type { Deployment } from "./gateway.js"

const benchActor = { userId: "bench", kind: "builtin_admin" } as const

/**
 * Runs `effect` against the process-wide services of `deployment`'s store (opened with its
 * configuration and key, closed afterwards), before the measured gateway starts: the writes an
 * administrator would make. `Config` is the deployment's loaded configuration.
 */
export const inDeploymentStore = <A, E>(deployment: Deployment, effect: Effect.Effect<A, E, BaseServices | Config>) =>
  Effect.runPromise(
    Effect.scoped(
      Effect.gen(function* () {
        const loaded = yield* loadConfig(deployment.configFile, { GATEWAY_CONFIG_KEY: deployment.configKey })
        const key = yield* parseConfigKey(deployment.configKey)
        const base = yield* Layer.build(baseLayer(loaded.config, key))
        return yield* effect.pipe(Effect.provide(base), Effect.provideService(Config, loaded))
      })
    ).pipe(Logger.withMinimumLogLevel(LogLevel.Error))
  )

/**
 * The development user of `deployment` (`gateway dev-token` signs for it) gets, through a real
 * permission group written to the deployment's database, every tool in `tools` (backend id → tool
 * names): the measured gateways run with the stored access policy on, as production does.
 */
export const grantDeveloper = (deployment: Deployment, tools: Readonly<Record<string, ReadonlyArray<string>>>) =>
  inDeploymentStore(
    deployment,
    Effect.gen(function* () {
      const { config } = yield* Config
      const developerId = yield* ensureDevelopmentAccess(config)
      const writes = yield* PolicyWrites
      const permissions = Schema.decodeUnknownSync(Permissions)({
        access: Object.entries(tools).map(([endpoint, names]) => ({
          endpoint_id: endpoint,
          tools: names,
          allow_write_requests: true
        }))
      })
      const groupId = yield* writes.createGroup(benchActor, {
        name: "bench",
        enabled: true,
        permissions,
        sourceGroups: []
      })
      const user = Option.getOrThrow(yield* (yield* UserRepo).findLocalByUsername(DEVELOPER_USERNAME))
      const current = yield* (yield* MembershipRepo).forUser(developerId)
      yield* writes.updateUser(benchActor, developerId, user.revision, {
        enabled: true,
        groups: [...current.map((row) => row.group_id), groupId]
      })
    })
  )
