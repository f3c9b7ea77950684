import { execFile, execFileSync, spawnSync } from "node:child_process"
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { freePort } from "./gateway-process.js"

/**
 * A PostgreSQL server of the test's own, for tests that stop and start the database under a running
 * gateway: `initdb` in a temp directory, on a free port, trust authentication. Never the shared server
 * at 5432 (test/support/databases.ts), which other tests use at the same time. When the tests run as
 * root, the server runs as the `postgres` user (PostgreSQL refuses to run as root).
 */
export interface PrivatePostgres {
  readonly port: number
  /** `postgres://postgres[:password]@127.0.0.1:<port>/postgres`. */
  url(password?: string): string
  /** Starts the server; resolves when pg_ctl saw it accept connections. */
  start(): Promise<void>
  /** Stops it (`fast`: sessions are ended with admin_shutdown, as a restart or failover does). */
  stop(): Promise<void>
  /** Stops it and removes its directory. */
  remove(): void
}

const binDir = (): string => {
  const base = "/usr/lib/postgresql"
  const versions = existsSync(base) ? readdirSync(base).sort((a, b) => Number(b) - Number(a)) : []
  for (const version of versions) {
    const dir = join(base, version, "bin")
    if (existsSync(join(dir, "initdb"))) return dir
  }
  throw new Error("no PostgreSQL server binaries under /usr/lib/postgresql/*/bin")
}

const runAs = (): { uid: number; gid: number } | undefined => {
  if (process.getuid?.() !== 0) return undefined
  const uid = Number(execFileSync("id", ["-u", "postgres"]).toString().trim())
  const gid = Number(execFileSync("id", ["-g", "postgres"]).toString().trim())
  return { uid, gid }
}

export const privatePostgres = async (): Promise<PrivatePostgres> => {
  const bin = binDir()
  const user = runAs()
  const dir = mkdtempSync(join(tmpdir(), "gateway-pg-"))
  if (user !== undefined) chownSync(dir, user.uid, user.gid)
  const data = join(dir, "data")
  const port = await freePort()
  // Asynchronous: the test's own clients keep running while the server starts or stops.
  const run = (command: string, args: ReadonlyArray<string>) =>
    new Promise<void>((done, fail) =>
      execFile(
        join(bin, command),
        args,
        {
          ...(user === undefined ? {} : user),
          cwd: dir,
          env: { PATH: process.env["PATH"] ?? "", LC_ALL: "C" },
          timeout: 30_000
        },
        (error, stdout, stderr) => (error === null ? done() : fail(new Error(`${command} failed: ${stderr}${stdout}`)))
      )
    )
  await run("initdb", ["-D", data, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8"])
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c shared_buffers=16MB`
  const server: PrivatePostgres = {
    port,
    url: (password) => `postgres://postgres${password === undefined ? "" : `:${password}`}@127.0.0.1:${port}/postgres`,
    start: () => run("pg_ctl", ["-D", data, "-o", options, "-l", join(dir, "server.log"), "-w", "-t", "20", "start"]),
    stop: () => run("pg_ctl", ["-D", data, "-m", "fast", "-w", "-t", "20", "stop"]),
    remove: () => {
      spawnSync(join(bin, "pg_ctl"), ["-D", data, "-m", "immediate", "-w", "stop"], {
        ...(user === undefined ? {} : user),
        cwd: dir,
        stdio: "ignore"
      })
      rmSync(dir, { recursive: true, force: true })
    }
  }
  await server.start()
  return server
}
