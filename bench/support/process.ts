import { type ChildProcess, spawn } from "node:child_process"
import { appendFileSync } from "node:fs"
import { join } from "node:path"
import { createInterface } from "node:readline"

export interface ExitStatus {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
}

/** A server under test, started as a separate process so the load generator never shares its event loop. */
export interface Child {
  readonly name: string
  readonly pid: number
  /** `performance.now()` just before the spawn: the zero of every start-up figure. */
  readonly spawnedAt: number
  readonly exited: Promise<ExitStatus>
  hasExited(): boolean
  /** Resolves at the first output line (stdout or stderr) that passes `test`. */
  waitForLine(test: (line: string) => boolean, timeoutMs: number): Promise<void>
  /** SIGTERM, then SIGKILL if it has not exited after `timeoutMs`. */
  stop(timeoutMs?: number): Promise<ExitStatus>
  /** The last output lines, for error messages. */
  tail(): string
}

const TAIL_LINES = 40
/**
 * A directory to copy every child's output into (`<name>.log`, each line after the milliseconds since
 * the spawn), for reading a run afterwards beside the bench's own timeline.
 */
const childLogs = process.env["BENCH_CHILD_LOGS"]
const live = new Set<ChildProcess>()

// A crashed or interrupted bench must not leave servers holding ports. Signals are turned into an
// exit because Node's default signal death skips "exit" handlers.
process.on("exit", () => {
  for (const child of live) child.kill("SIGKILL")
})
process.once("SIGINT", () => process.exit(130))
process.once("SIGTERM", () => process.exit(143))

export const startProcess = (
  name: string,
  command: string,
  args: ReadonlyArray<string>,
  options: { readonly cwd: string; readonly env: NodeJS.ProcessEnv }
): Child => {
  const spawnedAt = performance.now()
  const child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: ["ignore", "pipe", "pipe"] })
  if (child.pid === undefined) throw new Error(`${name}: could not start ${command}`)
  live.add(child)
  const lines: string[] = []
  const watchers = new Set<(line: string) => void>()
  let status: ExitStatus | undefined
  const exited = new Promise<ExitStatus>((resolve) => {
    child.once("exit", (code, signal) => {
      live.delete(child)
      status = { code, signal }
      resolve(status)
    })
  })
  // Output is always drained: a full pipe would block the server and distort the figures.
  const logFile = childLogs === undefined ? undefined : join(childLogs, `${name.replace(/[^A-Za-z0-9-]/g, "_")}.log`)
  for (const stream of [child.stdout, child.stderr]) {
    createInterface({ input: stream }).on("line", (line) => {
      if (logFile !== undefined) appendFileSync(logFile, `${(performance.now() - spawnedAt).toFixed(0)} ${line}\n`)
      lines.push(line)
      if (lines.length > TAIL_LINES) lines.shift()
      for (const watcher of watchers) watcher(line)
    })
  }
  const tail = () => lines.join("\n")

  const waitForLine = (test: (line: string) => boolean, timeoutMs: number) =>
    new Promise<void>((resolve, reject) => {
      const done = (error?: Error) => {
        clearTimeout(timer)
        watchers.delete(watcher)
        if (error === undefined) resolve()
        else reject(error)
      }
      const watcher = (line: string) => {
        if (test(line)) done()
      }
      const timer = setTimeout(
        () => done(new Error(`${name}: no expected output after ${timeoutMs} ms\n${tail()}`)),
        timeoutMs
      )
      watchers.add(watcher)
      if (lines.some(test)) done()
      exited.then(({ code, signal }) =>
        done(new Error(`${name} exited (${code ?? signal}) before it was ready\n${tail()}`))
      )
    })

  const stop = async (timeoutMs = 10_000) => {
    if (status !== undefined) return status
    child.kill("SIGTERM")
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs)
    const result = await exited
    clearTimeout(timer)
    return result
  }

  return {
    name,
    pid: child.pid,
    spawnedAt,
    exited,
    hasExited: () => status !== undefined,
    waitForLine,
    stop,
    tail
  }
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))
