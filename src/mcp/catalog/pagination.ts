import { ProtocolError, ProtocolErrorCode } from "@modelcontextprotocol/server"

/**
 * Cursors across backends (docs/mcp.md, "Pagination"). Lists are sorted by exposed key, and a cursor
 * is the last key a page returned, so a page boundary survives catalog refreshes and reloads: the next
 * page starts after that key whatever was added or removed meanwhile. Opaque to clients (base64url).
 */

export const encodeCursor = (lastKey: string): string =>
  Buffer.from(JSON.stringify({ after: lastKey })).toString("base64url")

export const decodeCursor = (cursor: string | undefined): string | undefined => {
  if (cursor === undefined) return undefined
  try {
    const decoded: unknown = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"))
    if (typeof decoded === "object" && decoded !== null && typeof (decoded as { after?: unknown }).after === "string") {
      return (decoded as { after: string }).after
    }
  } catch {
    // Falls through to the same answer as any other malformed cursor.
  }
  throw new ProtocolError(ProtocolErrorCode.InvalidParams, "Invalid cursor")
}

/** First index whose key is strictly greater than `after` (lists are sorted by key). */
const startAfter = (entries: ReadonlyArray<{ readonly key: string }>, after: string | undefined): number => {
  if (after === undefined) return 0
  let low = 0
  let high = entries.length
  while (low < high) {
    const middle = (low + high) >>> 1
    if (entries[middle]!.key <= after) low = middle + 1
    else high = middle
  }
  return low
}

export interface Page<T> {
  readonly items: ReadonlyArray<T>
  readonly nextCursor: string | undefined
}

export const pageOf = <E extends { readonly key: string }, T>(
  entries: ReadonlyArray<E>,
  visible: (entry: E) => boolean,
  cursor: string | undefined,
  size: number,
  project: (entry: E) => T
): Page<T> => {
  const items: Array<T> = []
  let last: string | undefined
  for (let index = startAfter(entries, decodeCursor(cursor)); index < entries.length; index++) {
    const entry = entries[index]!
    if (!visible(entry)) continue
    if (items.length === size) return { items, nextCursor: encodeCursor(last!) }
    items.push(project(entry))
    last = entry.key
  }
  return { items, nextCursor: undefined }
}
