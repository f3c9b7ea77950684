/**
 * JSON Pointers (RFC 6901) into a call's arguments: where an HTTP tool takes its body and its argument
 * headers from. Only own properties are followed, so `/__proto__` or `/constructor` never reach
 * anything the caller did not send.
 */

/** The reference tokens of a pointer, or undefined when it is not a well-formed pointer. */
export const pointerTokens = (pointer: string): ReadonlyArray<string> | undefined => {
  if (pointer === "") return []
  if (!pointer.startsWith("/")) return undefined
  const tokens = pointer.slice(1).split("/")
  if (tokens.some((token) => /~(?![01])/.test(token))) return undefined
  return tokens.map((token) => token.replaceAll("~1", "/").replaceAll("~0", "~"))
}

/** The value a pointer names in `root`, or undefined when there is none. */
export const resolvePointer = (root: unknown, tokens: ReadonlyArray<string>): unknown => {
  let here: unknown = root
  for (const token of tokens) {
    if (Array.isArray(here)) {
      if (!/^(?:0|[1-9][0-9]*)$/.test(token)) return undefined
      here = here[Number(token)]
    } else if (typeof here === "object" && here !== null) {
      if (!Object.hasOwn(here, token)) return undefined
      here = (here as Record<string, unknown>)[token]
    } else return undefined
  }
  return here
}
