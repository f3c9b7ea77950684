import { spawn } from "node:child_process"

/**
 * Reading `/metrics` in tests: one sample's value by name and labels, and Prometheus's own `promtool
 * check metrics` over the whole exposition (Debian's `prometheus` package; scripts/test-prerequisites.mjs).
 */

const unescapeLabel = (value: string) => value.replace(/\\(.)/g, (_, char: string) => (char === "n" ? "\n" : char))

const parseLabels = (text: string): Record<string, string> => {
  const labels: Record<string, string> = {}
  for (const match of text.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
    labels[match[1]!] = unescapeLabel(match[2]!)
  }
  return labels
}

export interface Sample {
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
  readonly value: number
}

export const samples = (exposition: string): ReadonlyArray<Sample> =>
  exposition.split("\n").flatMap((line) => {
    if (line === "" || line.startsWith("#")) return []
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (match === null) throw new Error(`not a sample line: ${line}`)
    return [{ name: match[1]!, labels: parseLabels(match[2] ?? ""), value: Number(match[3]) }]
  })

/** The value of the one sample named `name` whose labels include `labels`; 0 when there is none. */
export const sampleValue = (exposition: string, name: string, labels: Record<string, string> = {}): number => {
  const found = samples(exposition).filter(
    (sample) => sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value)
  )
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`)
  return found[0]?.value ?? 0
}

export const scrape = async (origin: string): Promise<string> => {
  const response = await fetch(`${origin}/metrics`)
  if (response.status !== 200) throw new Error(`/metrics answered ${response.status}`)
  return response.text()
}

/** `promtool check metrics` reads the exposition on stdin: its exit code and what it said. */
export const promtoolCheck = (exposition: string): Promise<{ readonly code: number; readonly output: string }> =>
  new Promise((done, fail) => {
    const child = spawn("promtool", ["check", "metrics"], { stdio: ["pipe", "pipe", "pipe"] })
    let output = ""
    child.stdout.on("data", (chunk) => {
      output += chunk
    })
    child.stderr.on("data", (chunk) => {
      output += chunk
    })
    child.once("error", fail)
    child.once("close", (code) => done({ code: code ?? -1, output }))
    child.stdin.end(exposition)
  })
