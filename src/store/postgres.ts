import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Context, Duration, Effect, Layer, Redacted } from "effect"
import type { Sealer } from "../crypto/sealer.js"
import { toStoreError } from "./failure-reason.js"
import { initializeStore } from "./initialize.js"
import { SCHEMA_VERSION, Store, type StoreError } from "./store.js"

/** Startup must fail within a bounded time when PostgreSQL is down or unroutable. */
const CONNECT_TIMEOUT = Duration.seconds(5)

interface PgTarget {
  /** `host:port`, for "cannot connect" messages. */
  readonly address: string
  /** `PostgreSQL database "name" at host:port`, for everything after connecting. Never the password. */
  readonly description: string
  readonly password: string
}

const describeUrl = (url: Redacted.Redacted<string>): PgTarget => {
  try {
    const parsed = new URL(Redacted.value(url))
    const address = `${parsed.hostname || "localhost"}:${parsed.port || "5432"}`
    const database = decodeURIComponent(parsed.pathname.replace(/^\//, "")) || "(default)"
    return {
      address,
      description: `PostgreSQL database "${database}" at ${address}`,
      password: decodeURIComponent(parsed.password)
    }
  } catch {
    return { address: "(unparseable URL)", description: "(unparseable URL)", password: "" }
  }
}

/** The PostgreSQL store (single instance: several gateways on one database are out of scope). */
export const StorePg = (url: Redacted.Redacted<string>): Layer.Layer<Store | SqlClient.SqlClient, StoreError, Sealer> =>
  Layer.scopedContext(
    Effect.gen(function* () {
      const target = describeUrl(url)
      const secrets = [target.password, Redacted.value(url)]
      const client = yield* Layer.build(
        PgClient.layer({ url, connectTimeout: CONNECT_TIMEOUT, applicationName: "gateway" })
      ).pipe(Effect.catchAllCause(toStoreError(`cannot connect to PostgreSQL at ${target.address}`, secrets)))
      const sql = Context.get(client, SqlClient.SqlClient)
      const opened = yield* initializeStore("postgres", target.description, secrets).pipe(
        Effect.provideService(SqlClient.SqlClient, sql)
      )
      return Context.make(SqlClient.SqlClient, sql).pipe(
        Context.add(Store, { kind: "postgres", schemaVersion: SCHEMA_VERSION, where: target.description, opened })
      )
    })
  )
