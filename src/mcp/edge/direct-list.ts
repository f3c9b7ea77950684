import type { IncomingHttpHeaders } from "node:http"
import type { View } from "../../policy/view.js"
import type { CatalogIndex } from "../catalog/index.js"
import { decodeCursor, encodeCursor, pageOf } from "../catalog/pagination.js"
import { type DirectRequest, directRequest } from "./direct.js"

/** A `tools/list` the gateway answers itself (see direct.ts for which requests qualify). */
export interface DirectList {
  readonly era: DirectRequest["era"]
  readonly id: string | number
  readonly cursor: string | undefined
}

const listParams: ReadonlySet<string> = new Set(["cursor"])

export const directToolList = (
  message: unknown,
  headers: IncomingHttpHeaders,
  modernRevisions: ReadonlySet<string>
): DirectList | undefined => {
  const request = directRequest(message, headers, "tools/list", listParams, () => undefined, modernRevisions)
  const cursor = request?.params["cursor"]
  if (request === undefined || (cursor !== undefined && typeof cursor !== "string")) return undefined
  return { era: request.era, id: request.id, cursor }
}

const isIssuedCursor = (index: CatalogIndex, cursor: string): boolean => {
  let after: string | undefined
  try {
    after = decodeCursor(cursor)
  } catch {
    return false
  }
  return after !== undefined && encodeCursor(after) === cursor && index.toolByName.has(after)
}

/** Serialized pages are kept up to this many bytes per generation; past it, pages are built per request. */
const maxCachedBytes = 16 * 1024 * 1024

/**
 * `tools/list` result documents, serialized once per catalog index, caller view (its fingerprint:
 * callers with the same effective access share pages) and cursor: a catalog of thousands of tools is
 * otherwise re-serialized (and, through the SDK, re-validated) on every page of every client's listing.
 * A rebuilt index starts a new cache, so a cached page never outlives the catalog it was cut from, and
 * a changed permission changes the fingerprint, so it can never be served an older page. Pages are
 * kept as UTF-8 bytes, so a page of a large catalog (hundreds of kilobytes) is neither scanned for its
 * length nor encoded again on each request: the answer is written around it (`Reply.result`).
 */
export class ToolPages {
  private index: CatalogIndex | undefined
  private pages = new Map<string, Buffer>()
  private bytes = 0

  constructor(
    private readonly pageSize: number,
    /** What the SDK stamps on a 2026-era list result besides the list (src/mcp/edge/sdk-profile.ts). */
    private readonly modernTail: string
  ) {}

  /** Bytes held (keys and documents), for tests and diagnostics. */
  get cachedBytes(): number {
    return this.bytes
  }

  /** The JSON of the result in UTF-8, or undefined for a cursor the SDK must answer (it is not one of ours). */
  result(index: CatalogIndex, view: View, cursor: string | undefined, era: DirectRequest["era"]): Buffer | undefined {
    if (index !== this.index) {
      this.index = index
      this.pages = new Map()
      this.bytes = 0
    }
    // Only cursors this gateway hands out are cached: canonical, naming a tool of this catalog. Any
    // other string that decodes is still answered, just not kept (a caller cannot fill the cache).
    const cacheable = cursor === undefined || isIssuedCursor(index, cursor)
    const key = `${era}|${view.fingerprint}|${cursor ?? ""}`
    const cached = cacheable ? this.pages.get(key) : undefined
    if (cached !== undefined) return cached
    let page: ReturnType<typeof pageOf>
    try {
      page = pageOf(
        index.tools,
        (tool) => view.seesTool(tool),
        cursor,
        this.pageSize,
        (entry) => entry.item
      )
    } catch {
      return undefined
    }
    const next = page.nextCursor === undefined ? "" : `,"nextCursor":${JSON.stringify(page.nextCursor)}`
    const text = `{"tools":${JSON.stringify(page.items)}${next}${era === "modern" ? this.modernTail : ""}}`
    // Outside Node's shared pool of small buffers: a small page kept in the cache must not keep a whole
    // pool slab alive beyond the bytes it counts.
    const result = Buffer.allocUnsafeSlow(Buffer.byteLength(text))
    result.write(text, "utf8")
    if (cacheable && this.bytes + key.length + result.length <= maxCachedBytes) {
      this.pages.set(key, result)
      this.bytes += key.length + result.length
    }
    return result
  }
}
