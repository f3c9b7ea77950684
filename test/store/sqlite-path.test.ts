import { chmodSync, existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { StoreError } from "../../src/store/store.js"
import { storeLayer, withTempDir } from "../support/databases.js"

const isRoot = process.getuid?.() === 0

const openSqlite = (path: string) => Effect.scoped(Layer.build(storeLayer({ type: "sqlite", path })))

const refusal = (path: string) =>
  Effect.flip(openSqlite(path)).pipe(
    Effect.tap((error) => expect(error).toBeInstanceOf(StoreError)),
    Effect.map((error) => error.message)
  )

/**
 * A directory this process cannot create files in. Root ignores permission bits, so as root use sysfs,
 * whose root directory refuses new files to everyone.
 */
const unwritableDirectory = Effect.map(withTempDir, (dir) => {
  if (isRoot) return "/sys"
  const locked = join(dir, "locked")
  mkdirSync(locked, { mode: 0o555 })
  return locked
}).pipe(Effect.tap((dir) => Effect.addFinalizer(() => Effect.sync(() => dir !== "/sys" && chmodSync(dir, 0o755)))))

describe("SQLite database path", () => {
  it.scoped("refuses an unwritable directory and creates nothing", () =>
    Effect.gen(function* () {
      const dir = yield* unwritableDirectory
      const path = join(dir, `gateway-test-${process.pid}.db`)
      const message = yield* refusal(path)
      expect(message).toContain(`cannot use SQLite database ${path}`)
      expect(message).toMatch(/permission denied|not permitted|read-only/)
      expect(existsSync(path)).toBe(false)
    })
  )

  it.scoped("refuses a path two missing directories deep and creates neither", () =>
    Effect.gen(function* () {
      const dir = yield* withTempDir
      const message = yield* refusal(join(dir, "missing", "deeper", "gateway.db"))
      expect(message).toContain("create the directory first")
      expect(readdirSync(dir)).toEqual([])
    })
  )

  it.scoped("creates one missing directory (0700) and a 0600 database file", () =>
    Effect.gen(function* () {
      const dir = yield* withTempDir
      const path = join(dir, "data", "gateway.db")
      yield* openSqlite(path)
      expect(statSync(join(dir, "data")).mode & 0o777).toBe(0o700)
      expect(statSync(path).mode & 0o777).toBe(0o600)
    })
  )

  it.scoped("refuses a path whose directory is a file, or which is a directory", () =>
    Effect.gen(function* () {
      const dir = yield* withTempDir
      writeFileSync(join(dir, "plain"), "")
      expect(yield* refusal(join(dir, "plain", "gateway.db"))).toContain("is not a directory")
      mkdirSync(join(dir, "folder.db"))
      expect(yield* refusal(join(dir, "folder.db"))).toContain("not a regular file")
      expect(readdirSync(dir).sort()).toEqual(["folder.db", "plain"])
    })
  )
})
