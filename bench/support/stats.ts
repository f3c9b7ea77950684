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
