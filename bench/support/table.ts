/** One result table. Every suite returns one; `bench/run.ts` prints them as markdown. */
export interface Table {
  readonly title: string
  readonly columns: ReadonlyArray<string>
  readonly rows: ReadonlyArray<ReadonlyArray<string>>
  readonly notes?: ReadonlyArray<string>
}

const cell = (text: string) => text.replaceAll("|", "\\|")

/** Markdown with padded columns, so the table also reads well in a terminal. */
export const formatTable = (table: Table): string => {
  const lines = [table.columns, ...table.rows].map((row) => table.columns.map((_, index) => cell(row[index] ?? "")))
  const widths = table.columns.map((_, index) => Math.max(3, ...lines.map((row) => row[index]?.length ?? 0)))
  const render = (row: ReadonlyArray<string>) =>
    `| ${row.map((text, index) => text.padEnd(widths[index] ?? 0)).join(" | ")} |`
  const [header, ...body] = lines
  const rule = `| ${widths.map((width) => "-".repeat(width)).join(" | ")} |`
  const notes = (table.notes ?? []).map((note) => `\n${note}`).join("\n")
  return [`### ${table.title}`, "", render(header ?? []), rule, ...body.map(render), notes].join("\n").trimEnd()
}

export const verdict = (pass: boolean): string => (pass ? "PASS" : "MISS")

export const formatMs = (ms: number): string => {
  if (ms < 10) return `${ms.toFixed(2)} ms`
  if (ms < 100) return `${ms.toFixed(1)} ms`
  return `${Math.round(ms)} ms`
}

export const formatMb = (mb: number | undefined): string => (mb === undefined ? "n/a" : `${mb.toFixed(1)} MB`)

export const formatCount = (value: number): string => Math.round(value).toLocaleString("en-US")

/** "how many times the baseline": for costs, where lower is better. */
export const formatTimes = (value: number, baseline: number): string =>
  baseline > 0 ? `${(value / baseline).toFixed(1)}×` : "n/a"

/** "share of the baseline": for rates, where higher is better. */
export const formatShare = (value: number, baseline: number): string =>
  baseline > 0 ? `${Math.round((value / baseline) * 100)}%` : "n/a"

/** autocannon's latency histogram has whole-millisecond buckets; 0 means below one millisecond. */
export const formatWholeMs = (ms: number): string => (ms < 1 ? "< 1 ms" : `${Math.round(ms)} ms`)
