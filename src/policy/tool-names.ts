/**
 * How an access entry names the tools it grants (docs/access-policy.md, "Permission object"): exact
 * original tool names, or `["*"]` alone — every tool the backend publishes, now and later.
 */

/** The one wildcard of `access[].tools`. */
export const EVERY_TOOL = "*"

/**
 * Why a list of `access[].tools` is refused on write (to follow the list's path in the message), or
 * undefined. `"*"` must stand alone: beside
 * names it would make them meaningless, and a reader could take the list for the names alone. No
 * other pattern exists: a name holding `*` (`"read_*"`) would silently match nothing.
 */
export const toolListProblem = (tools: ReadonlyArray<string>): string | undefined => {
  if (tools.includes(EVERY_TOOL)) {
    return tools.length === 1 ? undefined : ': "*" grants every tool of the backend and must be the only item'
  }
  const pattern = tools.findIndex((tool) => tool.includes(EVERY_TOOL))
  return pattern < 0
    ? undefined
    : `[${pattern}]: "${tools[pattern]}": names are exact; only "*" alone is a wildcard (every tool of the backend)`
}
