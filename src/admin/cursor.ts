/**
 * The position a keyset listing gave out (`next_cursor`, a console page's `after`): the time and id of
 * the last item shown, as base64url JSON. Opaque to callers; anything else is refused when read back.
 */
export interface Position {
  readonly at: Date
  readonly id: string
}

export const encodePosition = (position: Position): string =>
  Buffer.from(JSON.stringify([position.at.getTime(), position.id])).toString("base64url")

/** The position `text` names, or undefined when it is not one this gateway gave out. */
export const decodePosition = (text: string): Position | undefined => {
  if (!/^[A-Za-z0-9_-]{1,400}$/.test(text)) return undefined
  let value: unknown
  try {
    value = JSON.parse(Buffer.from(text, "base64url").toString("utf8"))
  } catch {
    return undefined
  }
  if (!Array.isArray(value) || value.length !== 2) return undefined
  const [at, id] = value as [unknown, unknown]
  if (typeof at !== "number" || !Number.isSafeInteger(at) || at < 0 || typeof id !== "string") return undefined
  if (id.length === 0 || id.length > 128) return undefined
  return { at: new Date(at), id }
}
