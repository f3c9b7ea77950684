/** A JSON object (not null, not an array): what a parsed message's params, `_meta` or a schema node must be. */
export const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)
