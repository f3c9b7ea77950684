import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Either, Exit, Layer, Redacted, Scope } from "effect"
import { stringify } from "yaml"
import { parseConfig } from "../../src/config/load.js"
import type { StorageConfig } from "../../src/config/schema.js"
import type { LoadedConfig } from "../../src/config/service.js"
import { parseConfigKey } from "../../src/crypto/config-key.js"
import { baseLayer } from "../../src/runtime/base.js"
import type { BaseServices } from "../../src/runtime/generation-layer.js"
import { acquireGenerations } from "../../src/runtime/generations.js"
import { makeListener } from "../../src/runtime/listener.js"
import { freePort } from "./http.js"

/** The PostgreSQL server the bench creates its throw-away database on (as the tests do). */
const postgresAdminUrl = process.env["GATEWAY_TEST_PG_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"

const adminStatement = (statement: string) =>
  Effect.scoped(
    Effect.flatMap(Layer.build(PgClient.layer({ url: Redacted.make(postgresAdminUrl) })), (context) =>
      Context.get(context, PgClient.PgClient).unsafe(statement)
    )
  ).pipe(Effect.orDie)

/** A fresh storage of `kind`, removed by `Scope` close (a throw-away PostgreSQL database, or a SQLite file in `dir`). */
export const storageOf = (kind: "sqlite" | "postgres", dir: string) =>
  kind === "sqlite"
    ? Effect.succeed<StorageConfig>({ type: "sqlite", path: join(dir, "gateway.db") })
    : Effect.acquireRelease(
        Effect.suspend(() => {
          const name = `gw_bench_${randomBytes(6).toString("hex")}`
          return Effect.as(adminStatement(`CREATE DATABASE ${name}`), name)
        }),
        (name) => adminStatement(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      ).pipe(
        Effect.map((name): StorageConfig => {
          const url = new URL(postgresAdminUrl)
          url.pathname = `/${name}`
          return { type: "postgres", url: Redacted.make(url.toString()) }
        })
      )

export interface AuthBenchGateway {
  readonly origin: string
  readonly base: Context.Context<BaseServices>
  readonly loaded: LoadedConfig
  readonly close: () => Promise<void>
}

/**
 * The gateway in this process (production base layer and generation on a loopback listener), so the
 * bench can arrange sessions through the repositories. One client `cli`; the store of `kind`.
 */
export const startAuthGateway = async (
  kind: "sqlite" | "postgres",
  options: {
    readonly port?: number
    /** Keys of `auth.sso` besides the client (an upstream, bootstrap subjects). */
    readonly sso?: Record<string, unknown>
    readonly env?: Record<string, string>
    /** Keys of `server` besides `listen` and `public_url` (`trusted_proxies`). */
    readonly server?: Record<string, unknown>
  } = {}
): Promise<AuthBenchGateway> => {
  const scope = Effect.runSync(Scope.make())
  const dir = mkdtempSync(join(tmpdir(), "gateway-bench-auth-"))
  const port = options.port ?? (await freePort())
  const origin = `http://127.0.0.1:${port}`
  const run = <A, E>(effect: Effect.Effect<A, E, Scope.Scope>) => Effect.runPromise(Scope.extend(effect, scope))
  const storage = await run(storageOf(kind, dir))
  const document = {
    server: { listen: `127.0.0.1:${port}`, public_url: `${origin}/mcp`, ...options.server },
    auth: {
      issuer: `${origin}/sso`,
      sso: {
        clients: [{ id: "cli", redirect_uris: ["http://127.0.0.1/cb"], resources: [`${origin}/mcp`] }],
        ...options.sso
      }
    },
    storage: storage.type === "sqlite" ? storage : { type: "postgres", url: Redacted.value(storage.url) },
    admin: { listen: `127.0.0.1:${await freePort()}` },
    log_level: "error"
  }
  const parsed = parseConfig(join(dir, "gateway.yaml"), stringify(document), options.env ?? {})
  if (Either.isLeft(parsed)) throw new Error(parsed.left.message)
  const key = Effect.runSync(parseConfigKey(randomBytes(32).toString("base64")))
  const base = await run(Layer.build(baseLayer(parsed.right.config, key)))
  const listener = await Effect.runPromise(makeListener("127.0.0.1", port))
  await run(acquireGenerations({ base, first: parsed.right, activate: listener.activate }))
  return {
    origin,
    base,
    loaded: parsed.right,
    close: async () => {
      listener.stopAccepting()
      listener.closeAll()
      await Effect.runPromise(Scope.close(scope, Exit.void))
      rmSync(dir, { recursive: true, force: true })
    }
  }
}
