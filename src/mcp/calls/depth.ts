/**
 * How deep a caller's JSON may nest where the gateway passes it on (tool arguments, `inputResponses`,
 * client capabilities, answers to requests for input): deeper is refused with -32602 (docs/mcp.md,
 * "Request limits and errors"). No tool needs more, and serializing it again could exhaust the stack.
 */
export const MAX_ARGUMENT_DEPTH = 64

/** True when `value` nests objects or arrays more than `limit` levels deep (iterative: no recursion). */
export const nestsDeeperThan = (value: unknown, limit: number): boolean => {
  if (value === null || typeof value !== "object") return false
  const pending: Array<{ readonly node: object; readonly depth: number }> = [{ node: value, depth: 1 }]
  while (pending.length > 0) {
    const { node, depth } = pending.pop()!
    if (depth > limit) return true
    // Only containers are queued: a large flat array of values costs one pass, no allocation per value.
    const queue = (child: unknown) => {
      if (child !== null && typeof child === "object") pending.push({ node: child, depth: depth + 1 })
    }
    if (Array.isArray(node)) for (let at = 0; at < node.length; at++) queue(node[at])
    else for (const key in node) queue((node as Record<string, unknown>)[key])
  }
  return false
}

/** The -32602 message for a caller's `what` nesting too deep ("arguments nest …", "the answer nests …"). */
export const tooDeep = (what: string, verb = "nest"): string =>
  `Invalid params: ${what} ${verb} deeper than ${MAX_ARGUMENT_DEPTH} levels`
