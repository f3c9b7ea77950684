/**
 * The checks of one archive line that need no other line, run on worker threads by the verifier
 * (verify-file.ts): the envelope's shape, the hash of the entry's bytes, the entry's fields, the key and
 * the Ed25519 signature, and that the key may sign the entry's sequence (its range, when the verifier was
 * given one). The chain (sequence and previous hash) is checked in order on the main thread.
 *
 * This function's source text is the worker's whole program (`new Worker(source, { eval: true })`), so
 * it works the same from the TypeScript sources, the tests and the bundled executable: it must use
 * nothing but its parameter and globals. The rules are the ones docs/audit-archive.md states.
 */
export function recordWorker(load: NodeJS.Require): void {
  const { parentPort, workerData } = load("node:worker_threads") as typeof import("node:worker_threads")
  const { createHash, createPublicKey, verify } = load("node:crypto") as typeof import("node:crypto")
  interface Key {
    readonly object: import("node:crypto").KeyObject
    readonly first: number
    readonly last: number
  }
  const keys = new Map<string, Key>()
  const given = (workerData as { keys: ReadonlyArray<readonly [string, string, number, number]> }).keys
  for (const [id, x, first, last] of given) {
    const raw = Buffer.from(x, "base64")
    const object = createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: raw.toString("base64url") }, format: "jwk" })
    keys.set(id, { object, first, last })
  }
  const printable = /^[\x20-\x7e]*$/
  const hex64 = /^[0-9a-f]{64}$/
  const signatureText = /^[A-Za-z0-9+/]{86}==$/
  const fields = [
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
  const isObject = (value: unknown): value is Record<string, unknown> =>
    typeof value === "object" && value !== null && !Array.isArray(value)
  const hasExactly = (value: Record<string, unknown>, names: ReadonlyArray<string>) => {
    const own = Object.keys(value)
    return own.length === names.length && names.every((name) => Object.hasOwn(value, name))
  }
  const text = (value: unknown) => typeof value === "string" && value.length > 0
  const textOrNull = (value: unknown) => value === null || typeof value === "string"
  const hashOrNull = (value: unknown) => value === null || (typeof value === "string" && hex64.test(value))

  /** Why the entry's fields are refused, or undefined. */
  const entryProblem = (entry: Record<string, unknown>): string | undefined => {
    if (!hasExactly(entry, fields)) return `entry: expected exactly the fields ${fields.join(", ")}`
    if (entry.format !== 1) return "entry: format is not 1"
    if (!Number.isSafeInteger(entry.sequence) || (entry.sequence as number) < 1) {
      return "entry: sequence is not an integer from 1 to 2^53-1"
    }
    if (typeof entry.previous_hash !== "string" || !hex64.test(entry.previous_hash)) {
      return "entry: previous_hash is not 64 lowercase hex digits"
    }
    for (const name of ["key_id", "event_id", "approval_id", "action", "occurred_at"]) {
      if (!text(entry[name])) return `entry: ${name} is not a non-empty string`
    }
    for (const name of ["actor", "reason"])
      if (!textOrNull(entry[name])) return `entry: ${name} is not a string or null`
    const evidence = entry.evidence
    if (
      evidence !== null &&
      !(
        isObject(evidence) &&
        hasExactly(evidence, ["acr", "method"]) &&
        textOrNull(evidence.acr) &&
        textOrNull(evidence.method)
      )
    ) {
      return "entry: evidence is not null or an object of exactly acr and method (each a string or null)"
    }
    for (const name of ["intent_hash", "result_hash"]) {
      if (!hashOrNull(entry[name])) return `entry: ${name} is not 64 lowercase hex digits or null`
    }
    return undefined
  }

  /** [sequence, previous_hash, hash] of a line that holds, or why it does not. */
  const check = (line: string): readonly [number, string, string] | string => {
    if (line.length === 0) return "empty line"
    if (!printable.test(line)) return "holds a byte outside printable ASCII"
    let envelope: unknown
    try {
      envelope = JSON.parse(line)
    } catch {
      return "not JSON"
    }
    if (!isObject(envelope) || !hasExactly(envelope, ["entry", "hash", "signature"])) {
      return "envelope: expected an object of exactly entry, hash and signature"
    }
    const { entry, hash, signature } = envelope
    if (typeof entry !== "string") return "envelope: entry is not a string"
    if (!printable.test(entry)) return "envelope: entry holds a character outside printable ASCII"
    if (typeof hash !== "string" || !hex64.test(hash)) return "envelope: hash is not 64 lowercase hex digits"
    if (typeof signature !== "string" || !signatureText.test(signature)) {
      return "envelope: signature is not the Base64 of 64 bytes"
    }
    // The envelope exactly as the gateway writes it: a line carrying a field twice (JSON.parse keeps the
    // last) or spelled differently would put bytes nobody signed into a verified file.
    if (line !== JSON.stringify({ entry, hash, signature })) {
      return "envelope: not written as the gateway writes it (entry, hash, signature in that order, no spaces, each once)"
    }
    const digest = createHash("sha256").update(entry, "latin1").digest()
    if (digest.toString("hex") !== hash) return "hash does not match the entry's bytes (altered or re-serialized)"
    let fieldsOf: unknown
    try {
      fieldsOf = JSON.parse(entry)
    } catch {
      return "entry: not JSON"
    }
    if (!isObject(fieldsOf)) return "entry: not a JSON object"
    const problem = entryProblem(fieldsOf)
    if (problem !== undefined) return problem
    const keyId = fieldsOf.key_id as string
    const key = keys.get(keyId)
    if (key === undefined) return `unknown key id ${JSON.stringify(keyId.slice(0, 100))}`
    const sequence = fieldsOf.sequence as number
    // A retired key signs only the sequences it was given for: a forged tail signed with it is refused.
    if (sequence < key.first || sequence > key.last) {
      return `key ${JSON.stringify(keyId)} is not valid for sequence ${sequence} (given for ${key.first}-${key.last === Number.MAX_SAFE_INTEGER ? "" : key.last})`
    }
    if (!verify(null, digest, key.object, Buffer.from(signature, "base64"))) {
      return `signature does not verify with key ${JSON.stringify(keyId)}`
    }
    return [sequence, fieldsOf.previous_hash as string, hash]
  }

  parentPort?.on("message", (batch: { readonly id: number; readonly lines: ReadonlyArray<string> }) => {
    const sequences: Array<number> = []
    const previous: Array<string> = []
    const hashes: Array<string> = []
    let failure: { readonly index: number; readonly reason: string } | undefined
    for (let index = 0; index < batch.lines.length; index++) {
      const result = check(batch.lines[index] as string)
      if (typeof result === "string") {
        failure = { index, reason: result }
        break
      }
      sequences.push(result[0])
      previous.push(result[1])
      hashes.push(result[2])
    }
    parentPort.postMessage({ id: batch.id, sequences, previous, hashes, failure })
  })
}
