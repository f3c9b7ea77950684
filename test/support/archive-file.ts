import { generateKeyPairSync } from "node:crypto"
import { type ArchiveEntry, GENESIS_HASH, serializeEntry } from "../../src/events/archive/format.js"
import { type ArchiveSigningKey, parseArchiveSigningKey, sealEntry } from "../../src/events/archive/signing-key.js"

/** A fresh archive signing key as the configuration takes it: Base64 of the seed then the public key. */
export const newArchiveKeyText = (): string => {
  const { privateKey, publicKey } = generateKeyPairSync("ed25519")
  const seed = Buffer.from(privateKey.export({ format: "jwk" }).d as string, "base64url")
  const x = Buffer.from(publicKey.export({ format: "jwk" }).x as string, "base64url")
  return Buffer.concat([seed, x]).toString("base64")
}

export const newArchiveKey = (): ArchiveSigningKey => parseArchiveSigningKey(newArchiveKeyText()) as ArchiveSigningKey

/** The entry of approval event `sequence` of a made-up approval, as the gateway would write it. */
export const sampleEntry = (sequence: number, previousHash: string, keyId: string): ArchiveEntry => ({
  sequence,
  previous_hash: previousHash,
  key_id: keyId,
  event_id: `evt_${sequence.toString().padStart(8, "0")}`,
  approval_id: `apr_${Math.ceil(sequence / 4)}`,
  action: ["requested", "vote", "approved", "executed"][(sequence - 1) % 4] as string,
  actor: sequence % 4 === 1 ? null : `usr_${sequence % 7}`,
  occurred_at: new Date(Date.UTC(2026, 10, 1) + sequence * 1000).toISOString(),
  reason: sequence % 4 === 3 ? "Looks right — deploy \u00e9t\u00e9" : null,
  evidence: sequence % 4 === 2 ? { acr: "urn:mfa", method: "oidc" } : null,
  intent_hash: "ab".repeat(32),
  result_hash: sequence % 4 === 0 ? "cd".repeat(32) : null
})

/** `count` envelope lines (no line ends) chained from `after` (sequence 0 and the genesis hash by default). */
export const archiveLines = (
  key: ArchiveSigningKey,
  keyId: string,
  count: number,
  after: { readonly sequence: number; readonly hash: string } = { sequence: 0, hash: GENESIS_HASH }
): { readonly lines: Array<string>; readonly hashes: Array<string> } => {
  const lines: Array<string> = []
  const hashes: Array<string> = []
  let previous = after.hash
  for (let sequence = after.sequence + 1; sequence <= after.sequence + count; sequence++) {
    const sealed = sealEntry(key, serializeEntry(sampleEntry(sequence, previous, keyId)))
    lines.push(sealed.line)
    hashes.push(sealed.hash)
    previous = sealed.hash
  }
  return { lines, hashes }
}
