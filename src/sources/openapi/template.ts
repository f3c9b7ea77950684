/**
 * RFC 6570 pieces of an imported tool's URL template: literal text escaped so that it stays literal,
 * and an OpenAPI path (`/pets/{petId}`) checked and turned into a template whose expressions are simple
 * string expansions (`{petId}`: every value percent-encoded, `/` included, so no argument can add a path
 * segment, a query or another host).
 *
 * A kit, run on the import's worker thread from its source text (pointer.ts): nothing but globals.
 */

export type PathPart = { readonly literal: string } | { readonly parameter: string }

export function templateKit() {
  /** Characters RFC 6570 does not allow in a literal (section 2.1), `%` unless it starts an escape. */
  const NOT_LITERAL = /[\0-\x20"'<>\\^`{|}\x7f-\u{10ffff}]|%(?![0-9A-Fa-f]{2})/gu

  const literal = (text: string): string =>
    text.replace(NOT_LITERAL, (character) =>
      [...new TextEncoder().encode(character)]
        .map((byte) => `%${byte.toString(16).toUpperCase().padStart(2, "0")}`)
        .join("")
    )

  /** An RFC 6570 variable name as written: letters, digits and `_`, with single inner dots. */
  const isVarname = (name: string): boolean => /^[A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)*$/.test(name)

  /** An OpenAPI path split into literal text and `{parameter}`s, or why it cannot be a URL's path. */
  const splitPath = (path: string): ReadonlyArray<PathPart> | { readonly problem: string } => {
    if (!path.startsWith("/")) return { problem: 'a path must start with "/"' }
    if (/[?#]/.test(path)) return { problem: "a path may not hold ? or # (they would start a query or a fragment)" }
    if (path.includes("\\")) return { problem: "a path may not hold a backslash" }
    const parts: Array<PathPart> = []
    let rest = path
    while (rest !== "") {
      const open = rest.indexOf("{")
      const close = rest.indexOf("}")
      if (open < 0) {
        if (close >= 0) return { problem: 'a path has a "}" without its "{"' }
        parts.push({ literal: rest })
        break
      }
      if (close >= 0 && close < open) return { problem: 'a path has a "}" without its "{"' }
      const end = rest.indexOf("}", open)
      if (end < 0) return { problem: 'a path has a "{" without its "}"' }
      const name = rest.slice(open + 1, end)
      if (name === "" || name.includes("{")) return { problem: "a path has an empty or nested {...}" }
      if (open > 0) parts.push({ literal: rest.slice(0, open) })
      parts.push({ parameter: name })
      rest = rest.slice(end + 1)
    }
    // Dot segments would be resolved away by URL parsing, moving the request to another path.
    const segments = parts
      .map((part) => ("literal" in part ? part.literal : "x"))
      .join("")
      .split("/")
    if (segments.some((segment) => /^(\.|%2e){1,2}$/i.test(segment))) {
      return { problem: 'a path may not hold "." or ".." segments' }
    }
    return parts
  }

  return { literal, isVarname, splitPath }
}

export type TemplateKit = ReturnType<typeof templateKit>
