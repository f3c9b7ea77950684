import { sha256Hex } from "../crypto/hashing.js"
import { isRecord } from "../json.js"
import { parsePointer, resolvePointer } from "../policy/json-pointer.js"

/**
 * What an approval authorizes (docs/approvals.md, "Intent"): the call's arguments, normalized, and its
 * business metadata — which client asked, for which backend and tool. Its SHA-256 binds the approval:
 * the review page shows it, the reviewers' votes count for it, and the resume executes exactly it.
 */
export interface Intent {
  readonly arguments: Record<string, unknown>
  readonly metadata: {
    readonly backend: string
    readonly tool: string
    readonly client_id: string | null
  }
}

/**
 * JSON with object keys sorted at every level, so two spellings of the same arguments are one text:
 * `{"b":1,"a":2}` and `{"a":2,"b":1}` normalize alike; array order, types and numbers are kept.
 */
export const canonicalJson = (value: unknown): string => {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`
  if (isRecord(value)) {
    const keys = Object.keys(value).sort()
    return `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalJson(value[key])}`).join(",")}}`
  }
  return JSON.stringify(value ?? null)
}

export const intentText = (intent: Intent): string => canonicalJson(intent)
export const intentHash = (intent: Intent): string => sha256Hex(intentText(intent))

/** An approval's id: `apr_` and 128 random bits in base64url (22 characters). */
export const APPROVAL_ID_PATTERN = "apr_[A-Za-z0-9_-]{22}"
export const APPROVAL_ID = new RegExp(`^${APPROVAL_ID_PATTERN}$`)

/** Letters, digits, `.`, `_`, `:` and `-`, 1 to 128 of them. */
export const OPERATION_ID = /^[A-Za-z0-9._:-]{1,128}$/

export type OperationId =
  | { readonly _tag: "None" }
  | { readonly _tag: "Id"; readonly id: string }
  | { readonly _tag: "Invalid"; readonly message: string }

/** The caller's operation id at `pointer` (the rule's `operation_id_argument`), checked. */
export const operationIdOf = (pointer: string | undefined, args: Record<string, unknown>): OperationId => {
  if (pointer === undefined) return { _tag: "None" }
  const tokens = parsePointer(pointer)
  const value = tokens === undefined ? undefined : resolvePointer(args, tokens)
  if (typeof value !== "string") {
    return { _tag: "Invalid", message: `This write needs an operation id: a string argument at ${pointer}.` }
  }
  return OPERATION_ID.test(value)
    ? { _tag: "Id", id: value }
    : {
        _tag: "Invalid",
        message: `The operation id at ${pointer} must be 1 to 128 letters, digits, ".", "_", ":" or "-".`
      }
}

/**
 * The operation key: an operation id is bound to the issuer, subject, backend and tool it was used
 * with, so two callers (or two tools) never share one. Separated by NUL, which none of them contains
 * unescaped in a way that could make two different tuples one text (each part is JSON-encoded).
 */
export const operationKey = (parts: {
  readonly issuer: string
  readonly subject: string
  readonly backend: string
  readonly tool: string
  readonly operationId: string
}): string =>
  sha256Hex(
    [parts.issuer, parts.subject, parts.backend, parts.tool, parts.operationId]
      .map((part) => JSON.stringify(part))
      .join("\u0000")
  )
