/**
 * JSON Pointers (RFC 6901) into a parsed document.
 *
 * The mapping to tools runs on the import's worker thread, whose program is the source text of this
 * file's kit and its neighbours' (parse.ts): a kit uses nothing but its parameters and globals.
 */
export function pointerKit() {
  const escapeSegment = (segment: string): string => segment.replaceAll("~", "~0").replaceAll("/", "~1")

  const pointerOf = (...segments: ReadonlyArray<string | number>): string =>
    segments.map((segment) => `/${escapeSegment(String(segment))}`).join("")

  const isObject = (value: unknown): value is Record<string, unknown> =>
    typeof value === "object" && value !== null && !Array.isArray(value)

  /**
   * The value a `#/…` reference names, or undefined. The worker already checked every reference of the
   * document points at something (parse-worker.ts); this is the lookup.
   */
  const resolveReference = (document: unknown, ref: string): unknown => {
    if (ref === "#") return document
    let here: unknown = document
    for (const raw of ref.slice(2).split("/")) {
      let segment: string
      try {
        segment = decodeURIComponent(raw).replaceAll("~1", "/").replaceAll("~0", "~")
      } catch {
        return undefined
      }
      if (Array.isArray(here) && /^(0|[1-9][0-9]*)$/.test(segment)) here = here[Number(segment)]
      else if (isObject(here) && Object.hasOwn(here, segment)) here = here[segment]
      else return undefined
    }
    return here
  }

  /** The pointer a `#/…` reference names, as a pointer (its URI escapes undone). */
  const referencePointer = (ref: string): string => {
    try {
      return decodeURIComponent(ref.slice(1))
    } catch {
      return ref.slice(1)
    }
  }

  /** Sets an own property whatever its name: a document may name a property or component `__proto__`. */
  const setOwn = (target: Record<string, unknown>, key: string, value: unknown): void => {
    Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true })
  }

  return { escapeSegment, pointerOf, isObject, resolveReference, referencePointer, setOwn }
}

export type PointerKit = ReturnType<typeof pointerKit>

export const { isObject } = pointerKit()
