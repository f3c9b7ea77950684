import { readFileSync } from "node:fs"

/**
 * Resident set size of a process in MB, from /proc (Linux only; `undefined` elsewhere or once it has
 * exited). Read from outside so the figure is the server's own, not disturbed by asking it.
 */
export const readRssMb = (pid: number): number | undefined => {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8")
    const match = /^VmRSS:\s+(\d+)\s+kB$/m.exec(status)
    return match?.[1] === undefined ? undefined : Number(match[1]) / 1024
  } catch {
    return undefined
  }
}
