/**
 * Headers a request may carry once (docs/errors.md, "Repeated headers"). Node keeps the first of two
 * `Authorization`, `Content-Type` or `Host` headers and drops the other, and joins two `Mcp-*` headers
 * with ", "; a proxy in front may have read the other one, so the gateway would judge a request other
 * than the one that was checked before it. Such a request is refused whole.
 */
const singleValued: ReadonlyMap<string, string> = new Map(
  ["Authorization", "Content-Type", "Host", "Mcp-Session-Id", "Mcp-Protocol-Version", "Mcp-Method", "Mcp-Name"].map(
    (name) => [name.toLowerCase(), name]
  )
)

/** The name (as documented) of the first single-valued header `rawHeaders` holds twice; undefined when none. */
export const repeatedHeader = (rawHeaders: ReadonlyArray<string>): string | undefined => {
  let seen: Set<string> | undefined
  for (let at = 0; at < rawHeaders.length; at += 2) {
    const name = rawHeaders[at]!.toLowerCase()
    const shown = singleValued.get(name)
    if (shown === undefined) continue
    seen ??= new Set()
    if (seen.has(name)) return shown
    seen.add(name)
  }
  return undefined
}
