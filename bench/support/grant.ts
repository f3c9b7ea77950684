import { Effect, Layer, Logger, LogLevel, Option, Schema } from "effect"
import { loadConfig } from "../../src/config/load.js"
import { parseConfigKey } from "../../src/crypto/config-key.js"
import { DEVELOPER_USERNAME, ensureDevelopmentAccess } from "../../src/demo/dev-access.js"
import { Permissions } from "../../src/policy/permissions.js"
import { PolicyWrites } from "../../src/policy/writes.js"
import { baseLayer } from "../../src/runtime/base.js"
import { MembershipRepo } from "../../src/store/memberships.js"
import { UserRepo } from "../../src/store/users.js"
import type { Deployment } from "./gateway.js"

const benchActor = { userId: "bench", kind: "builtin_admin" } as const

/**
 * The development user of `deployment` (`gateway dev-token` signs for it) gets, through a real
 * permission group written to the deployment's database, every tool in `tools` (backend id → tool
 * names): the measured gateways run with the stored access policy on, as production does.
 */
export const grantDeveloper = (deployment: Deployment, tools: Readonly<Record<string, ReadonlyArray<string>>>) =>
  Effect.runPromise(
    Effect.scoped(
      Effect.gen(function* () {
        const { config } = yield* loadConfig(deployment.configFile, { GATEWAY_CONFIG_KEY: deployment.configKey })
        const key = yield* parseConfigKey(deployment.configKey)
        const base = yield* Layer.build(baseLayer(config, key))
        yield* Effect.gen(function* () {
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
        }).pipe(Effect.provide(base))
      })
    ).pipe(Logger.withMinimumLogLevel(LogLevel.Error))
  )
