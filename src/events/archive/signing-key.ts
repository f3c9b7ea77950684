import { createPrivateKey, createPublicKey, type KeyObject, sign } from "node:crypto"
import { entryDigest, envelopeLine } from "./format.js"

/**
 * `admin.approvals.audit_archive.signing_key`: Base64 of 64 bytes, the Ed25519 seed then its public key
 * (the layout of libsodium and of most Ed25519 tools). The public half is what verifiers are given, so a
 * public half that does not belong to the seed would sign an archive nobody can check: refused.
 */

const base64 = /^[A-Za-z0-9+/]+={0,2}$/
// PKCS #8 wrapping of a raw Ed25519 seed (RFC 8410): the DER prefix, then the 32 bytes.
const PKCS8_ED25519_PREFIX = Buffer.from("302e020100300506032b657004220420", "hex")

export interface ArchiveSigningKey {
  readonly privateKey: KeyObject
  /** The 32-byte public key, Base64: what `gateway verify-audit --key <id>=<this>` takes. */
  readonly publicKeyBase64: string
}

/** The key, or why it is refused (the text names no byte of it). */
export const parseArchiveSigningKey = (text: string): ArchiveSigningKey | string => {
  const bytes = base64.test(text) && text.replace(/=+$/, "").length % 4 !== 1 ? Buffer.from(text, "base64") : undefined
  if (bytes === undefined || bytes.length !== 64) {
    return "expected the Base64 encoding of exactly 64 bytes (Ed25519 private key: seed then public key)"
  }
  const privateKey = createPrivateKey({
    key: Buffer.concat([PKCS8_ED25519_PREFIX, bytes.subarray(0, 32)]),
    format: "der",
    type: "pkcs8"
  })
  const derived = Buffer.from(createPublicKey(privateKey).export({ format: "jwk" }).x ?? "", "base64url")
  if (!derived.equals(bytes.subarray(32))) {
    return "the public half (bytes 33-64) does not belong to the seed (bytes 1-32): was the key pasted from two different keys?"
  }
  return { privateKey, publicKeyBase64: derived.toString("base64") }
}

/** The envelope of one serialized entry: its hash, and the Ed25519 signature over the hash's 32 bytes. */
export const sealEntry = (
  key: ArchiveSigningKey,
  entryText: string
): { readonly hash: string; readonly line: string } => {
  const digest = entryDigest(entryText)
  const hash = digest.toString("hex")
  return { hash, line: envelopeLine(entryText, hash, sign(null, digest, key.privateKey).toString("base64")) }
}
