import { readFileSync } from "node:fs"

/**
 * utime + stime of a process so far, in µs, from /proc/<pid>/stat (clock ticks of 10 ms on Linux): far
 * less noisy than latency on a shared machine, so per-call CPU is how the suites compare two servers.
 */
export const cpuMicros = (pid: number): number => {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")
  return (Number(fields[11]) + Number(fields[12])) * 10_000
}
