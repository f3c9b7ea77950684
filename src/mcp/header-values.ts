/**
 * Header values of SEP-2243 (`Mcp-Name`, `Mcp-Param-*`): what the edge checks a client sent and what
 * the backend channel sends, written once.
 */
import { headerValue as sendableValue } from "../http/header-syntax.js"

/** A value a client sends as is in an `Mcp-Name` header (SEP-2243): printable ASCII, no surrounding space, no sentinel. */
export const plainHeaderValue = (value: string) =>
  value.length > 0 && value === value.trim() && sendableValue.test(value) && !value.startsWith("=?base64?")

/** A value as an `Mcp-Name`/`Mcp-Param-*` header carries it (SEP-2243): as is when plain, else the Base64 sentinel. */
export const headerValue = (value: string): string =>
  plainHeaderValue(value) ? value : `=?base64?${Buffer.from(value, "utf8").toString("base64")}?=`
