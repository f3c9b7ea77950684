import { createHash, createPublicKey, verify } from "node:crypto"
import { readFileSync } from "node:fs"

/**
 * A second verifier, written from docs/audit-archive.md ("The entry", "The envelope and the file",
 * "Verifying") with nothing but node:crypto and none of the gateway's code: if the page is precise enough
 * to write one from, this one agrees with `gateway verify-audit` on every file. Sequential and whole-file
 * on purpose (simple beats fast here).
 */
export type IndependentVerdict =
  | { readonly ok: true; readonly sequence: number; readonly hash: string }
  | { readonly ok: false; readonly line: number }

const FIELDS = [
  "format",
  "sequence",
  "previous_hash",
  "key_id",
  "event_id",
  "approval_id",
  "action",
  "actor",
  "occurred_at",
  "reason",
  "evidence",
  "intent_hash",
  "result_hash"
]
const HEX = /^[0-9a-f]{64}$/
const ZERO = "0".repeat(64)

const exactly = (value: unknown, names: ReadonlyArray<string>): value is Record<string, unknown> =>
  typeof value === "object" &&
  value !== null &&
  !Array.isArray(value) &&
  Object.keys(value).length === names.length &&
  names.every((name) => Object.hasOwn(value, name))

const stringOrNull = (value: unknown) => value === null || typeof value === "string"

const entryFieldsHold = (entry: Record<string, unknown>): boolean =>
  entry.format === 1 &&
  Number.isSafeInteger(entry.sequence) &&
  (entry.sequence as number) >= 1 &&
  typeof entry.previous_hash === "string" &&
  HEX.test(entry.previous_hash) &&
  ["key_id", "event_id", "approval_id", "action", "occurred_at"].every(
    (name) => typeof entry[name] === "string" && entry[name] !== ""
  ) &&
  stringOrNull(entry.actor) &&
  stringOrNull(entry.reason) &&
  (entry.evidence === null ||
    (exactly(entry.evidence, ["acr", "method"]) &&
      stringOrNull(entry.evidence.acr) &&
      stringOrNull(entry.evidence.method))) &&
  ["intent_hash", "result_hash"].every(
    (name) => entry[name] === null || (typeof entry[name] === "string" && HEX.test(entry[name] as string))
  )

/** A key as `verify-audit --key` takes it: Base64 of 32 bytes, and optionally the sequences it may sign. */
export type IndependentKey = string | { readonly publicKey: string; readonly first?: number; readonly last?: number }

export const independentVerify = (
  path: string,
  publicKeys: Readonly<Record<string, IndependentKey>>,
  checkpoint?: { readonly sequence: number; readonly hash: string }
): IndependentVerdict => {
  const bytes = readFileSync(path)
  const text = bytes.toString("latin1")
  const lines = text.split("\n")
  const cut = lines.pop() !== ""
  let last: { sequence: number; hash: string } | undefined
  let startedAtOne = false
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index] as string
    const refuse = { ok: false as const, line: index + 1 }
    if (line.length > 1_048_576 || !/^[\x20-\x7e]+$/.test(line)) return refuse
    let envelope: unknown
    try {
      envelope = JSON.parse(line)
    } catch {
      return refuse
    }
    if (!exactly(envelope, ["entry", "hash", "signature"])) return refuse
    const { entry, hash, signature } = envelope
    if (typeof entry !== "string" || typeof hash !== "string" || typeof signature !== "string") return refuse
    if (line !== JSON.stringify({ entry, hash, signature })) return refuse
    if (!/^[\x20-\x7e]*$/.test(entry)) return refuse
    const digest = createHash("sha256").update(Buffer.from(entry, "latin1")).digest()
    if (!HEX.test(hash) || digest.toString("hex") !== hash) return refuse
    let fields: unknown
    try {
      fields = JSON.parse(entry)
    } catch {
      return refuse
    }
    if (!exactly(fields, FIELDS) || !entryFieldsHold(fields)) return refuse
    const given = publicKeys[fields.key_id as string]
    if (given === undefined || !Object.hasOwn(publicKeys, fields.key_id as string)) return refuse
    const publicKey = typeof given === "string" ? given : given.publicKey
    if (typeof given !== "string") {
      const at = fields.sequence as number
      if ((given.first !== undefined && at < given.first) || (given.last !== undefined && at > given.last))
        return refuse
    }
    const signatureBytes = Buffer.from(signature, "base64")
    if (signatureBytes.length !== 64 || signatureBytes.toString("base64") !== signature) return refuse
    const key = createPublicKey({
      key: { kty: "OKP", crv: "Ed25519", x: Buffer.from(publicKey, "base64").toString("base64url") },
      format: "jwk"
    })
    if (!verify(null, digest, key, signatureBytes)) return refuse
    const sequence = fields.sequence as number
    const previous = fields.previous_hash as string
    if (last === undefined) {
      if (sequence === 1 && previous === ZERO) startedAtOne = true
      else if (!(checkpoint !== undefined && sequence === checkpoint.sequence + 1 && previous === checkpoint.hash)) {
        return refuse
      }
    } else if (sequence !== last.sequence + 1 || previous !== last.hash) return refuse
    if (checkpoint !== undefined && sequence === checkpoint.sequence && hash !== checkpoint.hash) return refuse
    last = { sequence, hash }
  }
  if (cut) return { ok: false, line: lines.length + 1 }
  if (last === undefined) {
    if (checkpoint !== undefined && checkpoint.sequence > 0) return { ok: false, line: 0 }
    return { ok: true, ...(checkpoint ?? { sequence: 0, hash: ZERO }) }
  }
  if (checkpoint !== undefined && startedAtOne && last.sequence < checkpoint.sequence) {
    return { ok: false, line: 0 }
  }
  return { ok: true, ...last }
}
