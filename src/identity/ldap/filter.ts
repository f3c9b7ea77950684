import type { Filter } from "ldapts"
import { ldapts } from "./ldapts.js"
import type { LdapSettings } from "./settings.js"

/**
 * Search filters built from the administrator's template and what a person typed. The typed name (and
 * a DN, for groups) only ever enters a filter escaped as RFC 4515 says, so `*)(uid=*` is a name like any
 * other, never filter syntax.
 */

/** The placeholders a template may hold: the typed name, and (group search only) the person's DN. */
export type Placeholder = "username" | "dn"

const PLACEHOLDER = /\{\{([^{}]*)\}\}/g

/** The placeholder names in `template`, in order, including unknown ones (validation names them). */
export const placeholdersIn = (template: string): ReadonlyArray<string> =>
  [...template.matchAll(PLACEHOLDER)].map((match) => match[1] ?? "")

const hexBytes = (char: string) =>
  [...Buffer.from(char, "utf8")].map((byte) => `\\${byte.toString(16).padStart(2, "0")}`).join("")

/**
 * RFC 4515 value escaping: `*`, `(`, `)`, `\` and NUL as `\2a`, `\28`, `\29`, `\5c`, `\00`, and
 * everything outside printable ASCII (controls, and each UTF-8 byte of other characters) as `\xx` too,
 * so the filter text is plain ASCII whatever the input.
 */
export const escapeFilterValue = (value: string): string => {
  let escaped = ""
  for (const char of value) {
    const code = char.codePointAt(0) ?? 0
    const plain = code >= 0x20 && code <= 0x7e && char !== "*" && char !== "(" && char !== ")" && char !== "\\"
    escaped += plain ? char : hexBytes(char)
  }
  return escaped
}

/** `template` with each placeholder replaced by its escaped value (validation makes sure each one has one). */
export const fillFilter = (template: string, values: Readonly<Partial<Record<Placeholder, string>>>): string =>
  template.replace(PLACEHOLDER, (whole, name: string) => {
    const value = values[name as Placeholder]
    return value === undefined ? whole : escapeFilterValue(value)
  })

const utf8 = new TextDecoder("utf-8", { fatal: true })

/**
 * ldapts turns each `\xx` of a string filter into one UTF-16 code unit (Latin-1), then writes the value
 * as UTF-8: an escaped `é` (`\c3\a9`) would reach the server as four bytes. So the text is made ASCII
 * first (raw non-ASCII in the template escaped byte by byte, like the values), and every value the parser
 * produced is read back as the UTF-8 bytes it stands for.
 */
const asBytes = (text: string) => {
  let ascii = ""
  for (const char of text) {
    const code = char.codePointAt(0) ?? 0
    ascii += code >= 0x20 && code <= 0x7e ? char : hexBytes(char)
  }
  return ascii
}

const fromLatin1 = (value: string): string | Buffer => {
  const bytes = Buffer.from(value, "latin1")
  try {
    return utf8.decode(bytes)
  } catch {
    // Not text (a template matching binary values, `\a1\b2…`): the exact bytes.
    return bytes
  }
}

type Node = Record<string, unknown>

const children = (node: Node): ReadonlyArray<Node> => [
  ...(Array.isArray(node["filters"]) ? (node["filters"] as Array<Node>) : []),
  ...(typeof node["filter"] === "object" && node["filter"] !== null ? [node["filter"] as Node] : [])
]

const decodeValues = (node: Node): void => {
  for (const key of ["value", "initial", "final"]) {
    const value = node[key]
    if (typeof value !== "string" || value === "") continue
    const decoded = fromLatin1(value)
    // Only an equality match writes raw bytes; elsewhere ldapts writes strings.
    node[key] = typeof decoded === "string" || node instanceof ldapts().EqualityFilter ? decoded : value
  }
  if (Array.isArray(node["any"])) {
    node["any"] = (node["any"] as Array<string>).map((part) => {
      const decoded = fromLatin1(part)
      return typeof decoded === "string" ? decoded : part
    })
  }
  for (const child of children(node)) decodeValues(child)
}

/** The filter ldapts sends for `text` (a filled template); throws when it is not a valid filter. */
export const toLdapFilter = (text: string): Filter => {
  const filter = ldapts().FilterParser.parseString(asBytes(text))
  decodeValues(filter as unknown as Node)
  return filter
}

const MARKER = "gatewayplaceholder"

/**
 * Why `template` cannot be used as a filter, or undefined: it must parse (RFC 4515, in parentheses), and
 * placeholders must stand where values go — `({{username}}=x)` would let a name pick the attribute.
 */
export const templateSyntaxProblem = (template: string): string | undefined => {
  if (!template.trim().startsWith("(") || !template.trim().endsWith(")")) {
    return "must be an RFC 4515 filter in parentheses"
  }
  let filter: Filter
  try {
    filter = toLdapFilter(template.trim().replace(PLACEHOLDER, MARKER))
  } catch (error) {
    return `is not a valid LDAP filter (RFC 4515): ${error instanceof Error ? error.message : String(error)}`
  }
  const outsideValues = (node: Node): boolean =>
    ["attribute", "matchType", "rule"].some((key) => String(node[key] ?? "").includes(MARKER)) ||
    children(node).some(outsideValues)
  return outsideValues(filter as unknown as Node)
    ? "placeholders must stand for values, e.g. (uid={{username}}), never for attribute names"
    : undefined
}

/** The user search's filter for what the person typed, e.g. `(uid=\2a\29\28uid=\2a)` for `*)(uid=*`. */
export const userFilter = (settings: LdapSettings, username: string): string =>
  fillFilter(settings.user_search_filter, { username })

/** The group search's filter for a person found at `dn` who typed `username`; undefined without a group search. */
export const groupFilter = (settings: LdapSettings, dn: string, username: string): string | undefined =>
  settings.group_search_filter === undefined ? undefined : fillFilter(settings.group_search_filter, { dn, username })
