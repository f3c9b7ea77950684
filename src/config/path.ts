/**
 * YAML paths as users read them (`backends[0].url`) and as code walks them (`["backends", 0, "url"]`).
 * Problems carry the text form; the loader parses it back to find the node's line.
 */

export type PathSegment = string | number

const plainKey = /^[A-Za-z_][A-Za-z0-9_-]*$/

export const formatPath = (segments: ReadonlyArray<PropertyKey>): string => {
  let text = ""
  for (const segment of segments) {
    if (typeof segment === "number") text += `[${segment}]`
    else if (typeof segment === "string" && plainKey.test(segment)) text += text === "" ? segment : `.${segment}`
    else text += `[${JSON.stringify(String(segment))}]`
  }
  return text
}

const token = /\.?([A-Za-z_][A-Za-z0-9_-]*)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]/y

/** Inverse of `formatPath`; stops at the first segment it cannot read (the line lookup then uses the parent). */
export const parsePath = (text: string): ReadonlyArray<PathSegment> => {
  const segments: Array<PathSegment> = []
  token.lastIndex = 0
  while (token.lastIndex < text.length) {
    const match = token.exec(text)
    if (match === null) break
    const [, key, index, quoted] = match
    if (key !== undefined) segments.push(key)
    else if (index !== undefined) segments.push(Number(index))
    else if (quoted !== undefined) segments.push(JSON.parse(quoted) as string)
  }
  return segments
}
