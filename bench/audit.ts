import { spawn } from "node:child_process"
import { createWriteStream, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { availableParallelism, tmpdir } from "node:os"
import { join } from "node:path"
import { Worker } from "node:worker_threads"
import { entryDigest, envelopeLine, GENESIS_HASH, serializeEntry } from "../src/events/archive/format.js"
import { parseArchiveSigningKey } from "../src/events/archive/signing-key.js"
import { newArchiveKeyText, sampleEntry } from "../test/support/archive-file.js"
import { ensureBuilt } from "./support/build.js"
import { formatCount, formatMb, formatShare, type Table, verdict } from "./support/table.js"

export const name = "audit"

/**
 * `gateway verify-audit` on a 1,000,000-entry archive (docs/audit-archive.md) against its floor, measured
 * in the same run: Ed25519 verification of the same signatures alone, one worker thread per core, with
 * nothing read, parsed, hashed or chained. Target: at least 70 % of the floor, peak RSS under 150 MB.
 * `AUDIT_BENCH_ENTRIES` makes the file smaller for a quick look.
 */
const ENTRIES = Number(process.env["AUDIT_BENCH_ENTRIES"] ?? 1_000_000)
const TARGET_SHARE = 0.7
const RSS_LIMIT_MB = 150
const KEY_ID = "bench"
const BATCH = 4096

// Signs digests for the file's writer: the hashes are chained in order here, the signatures (the slow
// part) made on every core.
const signerSource = `
const { parentPort, workerData } = require("node:worker_threads")
const { createPrivateKey, sign } = require("node:crypto")
const key = createPrivateKey({ key: Buffer.from(workerData.pkcs8), format: "der", type: "pkcs8" })
parentPort.on("message", ({ id, digests }) => {
  const out = Buffer.alloc((digests.length / 32) * 64)
  for (let i = 0; i < digests.length / 32; i++) sign(null, digests.subarray(i * 32, i * 32 + 32), key).copy(out, i * 64)
  parentPort.postMessage({ id, signatures: out })
})`

// The floor: verification alone over a shared copy of every digest and signature.
const floorSource = `
const { parentPort, workerData } = require("node:worker_threads")
const { createPublicKey, verify } = require("node:crypto")
const key = createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: workerData.x }, format: "jwk" })
const digests = Buffer.from(workerData.digests)
const signatures = Buffer.from(workerData.signatures)
parentPort.postMessage("ready")
parentPort.once("message", () => {
  let bad = 0
  for (let i = workerData.from; i < workerData.to; i++) {
    if (!verify(null, digests.subarray(i * 32, i * 32 + 32), key, signatures.subarray(i * 64, i * 64 + 64))) bad++
  }
  parentPort.postMessage(bad)
})`

const PKCS8_PREFIX = Buffer.from("302e020100300506032b657004220420", "hex")

interface Written {
  readonly digests: SharedArrayBuffer
  readonly signatures: SharedArrayBuffer
}

const writeArchive = async (path: string, keyText: string): Promise<Written> => {
  const seed = Buffer.from(keyText, "base64").subarray(0, 32)
  const threads = availableParallelism()
  const signers = Array.from(
    { length: threads },
    () => new Worker(signerSource, { eval: true, workerData: { pkcs8: Buffer.concat([PKCS8_PREFIX, seed]) } })
  )
  const digests = new SharedArrayBuffer(ENTRIES * 32)
  const signatures = new SharedArrayBuffer(ENTRIES * 64)
  const out = createWriteStream(path)
  let previous = GENESIS_HASH
  try {
    for (let first = 1; first <= ENTRIES; first += BATCH * threads) {
      const texts: Array<Array<string>> = []
      const work = signers.map((signer, index) => {
        const from = first + index * BATCH
        const to = Math.min(ENTRIES, from + BATCH - 1)
        const batch: Array<string> = []
        for (let sequence = from; sequence <= to; sequence++) {
          const text = serializeEntry(sampleEntry(sequence, previous, KEY_ID))
          const digest = entryDigest(text)
          digest.copy(Buffer.from(digests, (sequence - 1) * 32, 32))
          previous = digest.toString("hex")
          batch.push(text)
        }
        texts.push(batch)
        if (batch.length === 0) return Promise.resolve(Buffer.alloc(0))
        return new Promise<Buffer>((resolve) => {
          signer.once("message", ({ signatures: signed }: { signatures: Uint8Array }) => resolve(Buffer.from(signed)))
          signer.postMessage({ id: from, digests: Buffer.from(digests, (from - 1) * 32, batch.length * 32) })
        })
      })
      const signed = await Promise.all(work)
      let chunk = ""
      signed.forEach((sigs, index) => {
        const from = first + index * BATCH
        if (sigs.length === 0) return
        sigs.copy(Buffer.from(signatures, (from - 1) * 64, sigs.length))
        ;(texts[index] ?? []).forEach((text, offset) => {
          const sequence = from + offset
          const hash = Buffer.from(digests, (sequence - 1) * 32, 32).toString("hex")
          chunk += `${envelopeLine(text, hash, sigs.subarray(offset * 64, offset * 64 + 64).toString("base64"))}\n`
        })
      })
      if (!out.write(chunk)) await new Promise<void>((resolve) => out.once("drain", () => resolve()))
    }
  } finally {
    await new Promise<void>((resolve) => out.end(() => resolve()))
    await Promise.all(signers.map((signer) => signer.terminate()))
  }
  return { digests, signatures }
}

const measureFloor = async (written: Written, publicKey: string): Promise<number> => {
  const threads = availableParallelism()
  const x = Buffer.from(publicKey, "base64").toString("base64url")
  const workers = Array.from({ length: threads }, (_, index) => {
    const from = Math.floor((ENTRIES * index) / threads)
    const to = Math.floor((ENTRIES * (index + 1)) / threads)
    return new Worker(floorSource, { eval: true, workerData: { ...written, x, from, to } })
  })
  try {
    await Promise.all(workers.map((worker) => new Promise((resolve) => worker.once("message", resolve))))
    const began = performance.now()
    const bad = await Promise.all(
      workers.map(
        (worker) =>
          new Promise<number>((resolve) => {
            worker.once("message", resolve)
            worker.postMessage("go")
          })
      )
    )
    const seconds = (performance.now() - began) / 1000
    if (bad.some((count) => count > 0)) throw new Error("the floor found invalid signatures in the bench's own file")
    return ENTRIES / seconds
  } finally {
    await Promise.all(workers.map((worker) => worker.terminate()))
  }
}

const peakRssMb = (pid: number): number | undefined => {
  try {
    const match = /^VmHWM:\s+(\d+)\s+kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))
    return match?.[1] === undefined ? undefined : Number(match[1]) / 1024
  } catch {
    return undefined
  }
}

const measureVerifyAudit = async (
  entry: string,
  path: string,
  publicKey: string
): Promise<{ readonly perSecond: number; readonly peakMb: number | undefined }> => {
  const began = performance.now()
  const child = spawn(process.execPath, [entry, "verify-audit", "--file", path, "--key", `${KEY_ID}=${publicKey}`], {
    stdio: ["ignore", "pipe", "pipe"]
  })
  let output = ""
  child.stdout.on("data", (chunk) => {
    output += chunk
  })
  child.stderr.on("data", (chunk) => {
    output += chunk
  })
  // VmHWM is the process's own high-water mark (worker threads included): the last reading before exit holds it.
  let peak: number | undefined
  const poll = setInterval(() => {
    peak = Math.max(peak ?? 0, peakRssMb(child.pid as number) ?? 0)
  }, 100)
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve))
  clearInterval(poll)
  const seconds = (performance.now() - began) / 1000
  if (code !== 0 || !output.includes(`OK, ${ENTRIES} entries verified`)) {
    throw new Error(`verify-audit exited ${code}: ${output.slice(0, 500)}`)
  }
  return { perSecond: ENTRIES / seconds, peakMb: peak }
}

export const run = async (): Promise<Table> => {
  const entry = await ensureBuilt()
  const dir = mkdtempSync(join(tmpdir(), "bench-audit-"))
  try {
    const keyText = newArchiveKeyText()
    const key = parseArchiveSigningKey(keyText)
    if (typeof key === "string") throw new Error(key)
    const path = join(dir, "archive.jsonl")
    const written = await writeArchive(path, keyText)
    const floor = await measureFloor(written, key.publicKeyBase64)
    const verified = await measureVerifyAudit(entry, path, key.publicKeyBase64)
    const share = verified.perSecond / floor
    const rssOk = verified.peakMb !== undefined && verified.peakMb < RSS_LIMIT_MB
    return {
      title: `gateway verify-audit, ${formatCount(ENTRIES)} entries, ${availableParallelism()} worker threads`,
      columns: ["what", "entries/s", "peak RSS", "ratio", "target", "result"],
      rows: [
        ["floor: Ed25519 verify alone, worker threads", formatCount(floor), "", "100%", "", ""],
        [
          "gateway verify-audit (whole process, start to exit)",
          formatCount(verified.perSecond),
          formatMb(verified.peakMb),
          formatShare(verified.perSecond, floor),
          `>= ${TARGET_SHARE * 100}%, < ${RSS_LIMIT_MB} MB`,
          verdict(share >= TARGET_SHARE && rssOk)
        ]
      ],
      notes: [
        "verify-audit reads, parses, hashes and signature-checks every line on worker threads and checks the chain in order on the main thread; the floor verifies the same signatures from memory and nothing else."
      ]
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
