import { createHash } from "node:crypto"

/**
 * The audit archive's record format (docs/audit-archive.md). One envelope per line:
 *
 *   {"entry":"<the entry's JSON, as a JSON string>","hash":"<hex SHA-256 of the entry>","signature":"<Base64>"}
 *
 * The entry is carried as a string so its bytes travel untouched: a receiver or verifier that parses the
 * envelope gets back exactly the characters that were hashed and signed, whatever its JSON library does
 * with key order or spacing. The entry is printable ASCII (every other character written as `\uXXXX`),
 * so those characters are its bytes, one each, with no question of encoding.
 */

/** The format version every entry carries in `format`. */
export const ARCHIVE_FORMAT = 1

/** `previous_hash` of the entry with sequence 1. */
export const GENESIS_HASH = "0".repeat(64)

/** Longest envelope line a verifier reads (docs/audit-archive.md): far above what the gateway writes. */
export const MAX_LINE_BYTES = 1_048_576

/** What one entry says, in the order its fields are written. */
export interface ArchiveEntry {
  readonly sequence: number
  readonly previous_hash: string
  readonly key_id: string
  readonly event_id: string
  readonly approval_id: string
  readonly action: string
  /** The internal user id of who acted; null when the gateway acted (expiry, restart recovery). */
  readonly actor: string | null
  /** ISO 8601 UTC with milliseconds. */
  readonly occurred_at: string
  readonly reason: string | null
  /** How the actor signed in for this action (a vote's `acr`, the sign-in method); null when nobody did. */
  readonly evidence: { readonly acr: string | null; readonly method: string | null } | null
  /** Hex SHA-256 of the sealed (encrypted) intent as stored. */
  readonly intent_hash: string | null
  /** Hex SHA-256 of the sealed result as stored; null until there is one. */
  readonly result_hash: string | null
}

const nonAscii = /[\u007f-\uffff]/g
const unicodeEscape = (char: string) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`

/**
 * The entry's bytes, written once. Fields in a fixed order; `JSON.stringify` already escapes control
 * characters and lone surrogates, and every character above U+007E becomes `\uXXXX`, so the text is
 * printable ASCII.
 */
export const serializeEntry = (entry: ArchiveEntry): string =>
  JSON.stringify({
    format: ARCHIVE_FORMAT,
    sequence: entry.sequence,
    previous_hash: entry.previous_hash,
    key_id: entry.key_id,
    event_id: entry.event_id,
    approval_id: entry.approval_id,
    action: entry.action,
    actor: entry.actor,
    occurred_at: entry.occurred_at,
    reason: entry.reason,
    evidence: entry.evidence === null ? null : { acr: entry.evidence.acr, method: entry.evidence.method },
    intent_hash: entry.intent_hash,
    result_hash: entry.result_hash
  }).replace(nonAscii, unicodeEscape)

/** The 32 bytes that are signed. */
export const entryDigest = (entryText: string): Buffer => createHash("sha256").update(entryText, "latin1").digest()

/** One archive line without its line end, from the entry's bytes as written, never re-serialized. */
export const envelopeLine = (entryText: string, hashHex: string, signatureBase64: string): string =>
  JSON.stringify({ entry: entryText, hash: hashHex, signature: signatureBase64 })

/** The key id a stored envelope's entry was signed with; undefined when it does not parse as one. */
export const envelopeKeyId = (envelope: string): string | undefined => {
  try {
    const entry: unknown = JSON.parse((JSON.parse(envelope) as { entry: string }).entry)
    const keyId = (entry as { key_id?: unknown }).key_id
    return typeof keyId === "string" ? keyId : undefined
  } catch {
    return undefined
  }
}

/** The receipt a receiver answers with (docs/audit-archive.md, "Shipping"). */
export interface ArchiveReceipt {
  readonly sequence: number
  readonly hash: string
}
