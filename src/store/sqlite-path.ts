import { accessSync, closeSync, constants, mkdirSync, openSync, rmdirSync, rmSync, statSync } from "node:fs"
import { dirname, resolve } from "node:path"
import { Effect } from "effect"
import { StoreError } from "./store.js"

/** What preparing the path put on disk, so a failed start can take exactly that back. */
export interface PreparedSqlitePath {
  readonly createdFile: boolean
  readonly createdDirectory: string | undefined
}

const errorCode = (cause: unknown): string =>
  typeof cause === "object" && cause !== null && "code" in cause ? String(cause.code) : ""

const REASONS: Record<string, string> = {
  EACCES: "permission denied",
  EPERM: "operation not permitted",
  EROFS: "read-only file system",
  ENOTDIR: "a component of the path is not a directory",
  ENOENT: "no such file or directory"
}

const reasonOf = (cause: unknown): string => {
  const code = errorCode(cause)
  const known = REASONS[code]
  if (known !== undefined) return `${known} (${code})`
  return cause instanceof Error ? cause.message : String(cause)
}

const attempt = <A>(path: string, what: string, run: () => A) =>
  Effect.try({
    try: run,
    catch: (cause) => new StoreError({ message: `cannot use SQLite database ${path}: ${what}: ${reasonOf(cause)}` })
  })

const fail = (path: string, why: string) =>
  Effect.fail(new StoreError({ message: `cannot use SQLite database ${path}: ${why}` }))

const statOrMissing = (path: string, target: string) =>
  Effect.try({ try: () => statSync(target), catch: (cause) => cause }).pipe(
    Effect.map((stats) => ({ exists: true as const, stats })),
    Effect.catchAll((cause) =>
      errorCode(cause) === "ENOENT"
        ? Effect.succeed({ exists: false as const })
        : fail(path, `cannot inspect ${target}: ${reasonOf(cause)}`)
    )
  )

const existing = (path: string, file: string) =>
  Effect.gen(function* () {
    yield* attempt(path, "the file must be readable and writable", () =>
      accessSync(file, constants.R_OK | constants.W_OK)
    )
    // SQLite writes journal, WAL and shared-memory files beside the database.
    yield* attempt(path, `its directory ${dirname(file)} must be writable`, () =>
      accessSync(dirname(file), constants.W_OK | constants.X_OK)
    )
    return { createdFile: false, createdDirectory: undefined }
  })

/**
 * Makes sure the database file can be used before SQLite opens it. A missing parent directory is
 * created (mode 0700) only when ITS parent exists: one level covers `./data/gateway.db`, while a typo in
 * a deeper path fails instead of silently building a tree. The file is created here, exclusively and
 * with mode 0600, because creating it is the only reliable writability test (root passes `access`).
 */
export const prepareSqlitePath = (path: string): Effect.Effect<PreparedSqlitePath, StoreError> =>
  Effect.gen(function* () {
    const file = resolve(path)
    const directory = dirname(file)
    const found = yield* statOrMissing(path, file)
    if (found.exists) {
      if (!found.stats.isFile()) return yield* fail(path, "it exists but is not a regular file")
      return yield* existing(path, file)
    }
    const parent = yield* statOrMissing(path, directory)
    let createdDirectory: string | undefined
    if (!parent.exists) {
      const grandparent = dirname(directory)
      if (!(yield* statOrMissing(path, grandparent)).exists) {
        return yield* fail(
          path,
          `neither ${directory} nor its parent ${grandparent} exists; create the directory first`
        )
      }
      yield* attempt(path, `cannot create directory ${directory}`, () => mkdirSync(directory, { mode: 0o700 }))
      createdDirectory = directory
    } else if (!parent.stats.isDirectory()) {
      return yield* fail(path, `${directory} is not a directory`)
    }
    yield* attempt(path, "cannot create the file", () => closeSync(openSync(file, "wx", 0o600))).pipe(
      Effect.tapError(() => removeCreated(path, { createdFile: false, createdDirectory }))
    )
    return { createdFile: true, createdDirectory }
  })

/** Takes back what `prepareSqlitePath` created, including the side files SQLite may have added. */
export const removeCreated = (path: string, prepared: PreparedSqlitePath): Effect.Effect<void> =>
  Effect.sync(() => {
    const file = resolve(path)
    if (prepared.createdFile) {
      for (const suffix of ["", "-journal", "-wal", "-shm"]) rmSync(`${file}${suffix}`, { force: true })
    }
    if (prepared.createdDirectory !== undefined) rmdirSync(prepared.createdDirectory)
  }).pipe(Effect.ignore)
