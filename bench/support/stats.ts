const sorted = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)

export const median = (values: ReadonlyArray<number>): number => {
  const ordered = sorted(values)
  const middle = Math.floor(ordered.length / 2)
  if (ordered.length === 0) return Number.NaN
  if (ordered.length % 2 === 1) return ordered[middle] ?? Number.NaN
  return ((ordered[middle - 1] ?? Number.NaN) + (ordered[middle] ?? Number.NaN)) / 2
}

export const range = (values: ReadonlyArray<number>): { readonly min: number; readonly max: number } => ({
  min: Math.min(...values),
  max: Math.max(...values)
})

/** Nearest-rank percentile (`p` in 0-100) of a sample. */
export const percentile = (values: ReadonlyArray<number>, p: number): number => {
  const ordered = sorted(values)
  if (ordered.length === 0) return Number.NaN
  const rank = Math.min(ordered.length, Math.max(1, Math.ceil((p / 100) * ordered.length)))
  return ordered[rank - 1] ?? Number.NaN
}
