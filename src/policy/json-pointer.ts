/**
 * JSON Pointers (RFC 6901) as resource rules and approval policies use them to name a tool argument:
 * `/account/id` reads `arguments.account.id`, `/items/0` the first element of `arguments.items`.
 * `~1` is `/` and `~0` is `~` inside a token, decoded in that order (`~01` is the text `~1`).
 */

export type JsonPointer = ReadonlyArray<string>

/** The tokens of `pointer`, or undefined when it is not a pointer (`""` is the whole document). */
export const parsePointer = (pointer: string): JsonPointer | undefined => {
  if (pointer === "") return []
  if (!pointer.startsWith("/")) return undefined
  const tokens = pointer.slice(1).split("/")
  for (const token of tokens) if (/~(?![01])/.test(token)) return undefined
  return tokens.map((token) => token.replaceAll("~1", "/").replaceAll("~0", "~"))
}

/** An array index token: `0` or digits without a leading zero (RFC 6901 §4; `-` names no element). */
const arrayIndex = /^(0|[1-9][0-9]*)$/

const own = (value: object, key: string) => Object.hasOwn(value, key)

/**
 * The value at `pointer` inside `document`, or undefined when any step is missing: an absent member, an
 * index past the end or not a canonical index, or a step into a value that is neither object nor array.
 * Only own properties count, so `/__proto__` or `/constructor` never reach the prototype chain.
 */
export const resolvePointer = (document: unknown, pointer: JsonPointer): unknown => {
  let current: unknown = document
  for (const token of pointer) {
    if (Array.isArray(current)) {
      if (!arrayIndex.test(token)) return undefined
      const index = Number(token)
      if (index >= current.length) return undefined
      current = current[index]
    } else if (current !== null && typeof current === "object") {
      if (!own(current, token)) return undefined
      current = (current as Record<string, unknown>)[token]
    } else {
      return undefined
    }
  }
  return current
}
