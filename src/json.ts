/** A JSON object (not null, not an array): what a parsed message's params, `_meta` or a schema node must be. */
export const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/**
 * Sets `key` on an object being built as a copy of a parsed one: as an own data property, as `{...x}`
 * would copy it, also for `__proto__`, which plain assignment would take for the prototype.
 *
 * /mcp's hot path builds its copies key by key instead of with object spreads: V8 gives the spread copy
 * of a parsed object, and each key added to it after, a hidden class of its own on every call
 * (docs/decisions.md, "Per-call overhead").
 */
export const putField = (target: Record<string, unknown>, key: string, value: unknown): void => {
  if (key === "__proto__")
    Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true })
  else target[key] = value
}
