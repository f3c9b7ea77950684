import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import type { Checkpoint } from "../../../src/events/archive/chain.js"
import { serializeEntry } from "../../../src/events/archive/format.js"
import { sealEntry } from "../../../src/events/archive/signing-key.js"
import { type VerifyingKey, verifyArchiveFile } from "../../../src/events/archive/verify-file.js"
import { archiveLines, newArchiveKey, sampleEntry } from "../../support/archive-file.js"
import { runGatewayCommand } from "../../support/gateway-process.js"
import { independentVerify } from "./independent-verifier.js"

const dir = mkdtempSync(join(tmpdir(), "verify-audit-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

// More than two of the verifier's 256-line batches, so order across batches and workers is exercised.
const COUNT = 700
const key = newArchiveKey()
const other = newArchiveKey()
const { lines, hashes } = archiveLines(key, "k1", COUNT)
const keys = new Map([["k1", key.publicKeyBase64]])

let fileNumber = 0
const fileOf = (content: string): string => {
  const path = join(dir, `archive-${fileNumber++}.jsonl`)
  writeFileSync(path, content)
  return path
}
const joined = (some: ReadonlyArray<string>) => (some.length === 0 ? "" : `${some.join("\n")}\n`)

/** The line whose entry is `mutate`d and then signed properly, as a signer with a bug or the key would. */
const resigned = (sequence: number, mutate: (entry: Record<string, unknown>) => Record<string, unknown>) => {
  const entry = JSON.parse(serializeEntry(sampleEntry(sequence, hashes[sequence - 2] as string, "k1")))
  return sealEntry(key, JSON.stringify(mutate(entry))).line
}

interface Case {
  readonly title: string
  readonly content: string
  readonly keys?: ReadonlyMap<string, string | VerifyingKey>
  readonly after?: Checkpoint
  /** undefined: accepted with the checkpoint given; otherwise the line refused and a part of its reason. */
  readonly refused?: { readonly line: number; readonly reason: string }
  readonly checkpoint?: Checkpoint
}

const edited = (() => {
  const line = lines[99] as string
  const at = line.indexOf("apr_25")
  return `${line.slice(0, at)}apr_26${line.slice(at + 6)}`
})()

const reserialized = (() => {
  const envelope = JSON.parse(lines[49] as string) as { entry: string; hash: string; signature: string }
  const fields = JSON.parse(envelope.entry) as Record<string, unknown>
  const reversed = Object.fromEntries(Object.entries(fields).reverse())
  return JSON.stringify({ ...envelope, entry: JSON.stringify(reversed) })
})()

const brokenLink = (() => {
  // Line 301 claims another predecessor; it and everything after are properly signed and chained.
  const tail = archiveLines(key, "k1", 5, { sequence: 300, hash: "ee".repeat(32) })
  return joined([...lines.slice(0, 300), ...tail.lines])
})()

/** 12 entries whose reasons make each line about 900 KB: more than one batch's worth of bytes per line. */
const longLines = (() => {
  const out: Array<string> = []
  let previous = "0".repeat(64)
  for (let sequence = 1; sequence <= 12; sequence++) {
    const entry = { ...sampleEntry(sequence, previous, "k1"), reason: "why ".repeat(225_000) }
    const sealed = sealEntry(key, serializeEntry(entry))
    out.push(sealed.line)
    previous = sealed.hash
  }
  return { lines: out, last: previous }
})()

/** The first 300 entries signed with k1, the rest with k2 (a key rotated at sequence 301), chained as one. */
const rotated = (() => {
  const newer = archiveLines(other, "k2", COUNT - 300, { sequence: 300, hash: hashes[299] as string })
  return { content: joined([...lines.slice(0, 300), ...newer.lines]), last: newer.hashes.at(-1) as string }
})()
const rotatedKeys = (k1: VerifyingKey, k2: VerifyingKey) =>
  new Map<string, VerifyingKey>([
    ["k1", k1],
    ["k2", k2]
  ])

const cases: ReadonlyArray<Case> = [
  { title: "a good file", content: joined(lines), checkpoint: { sequence: COUNT, hash: hashes[COUNT - 1] as string } },
  {
    title: "one edited byte",
    content: joined([...lines.slice(0, 99), edited, ...lines.slice(100)]),
    refused: { line: 100, reason: "hash does not match the entry's bytes" }
  },
  {
    title: "a dropped middle line",
    content: joined([...lines.slice(0, 349), ...lines.slice(350)]),
    refused: { line: 350, reason: "sequence 351 where 350 was expected" }
  },
  {
    title: "two swapped lines",
    content: joined([...lines.slice(0, 199), lines[200] as string, lines[199] as string, ...lines.slice(201)]),
    refused: { line: 200, reason: "sequence 201 where 200 was expected" }
  },
  {
    title: "a wrong key",
    content: joined(lines),
    keys: new Map([["k1", other.publicKeyBase64]]),
    refused: { line: 1, reason: 'signature does not verify with key "k1"' }
  },
  {
    title: "an unknown key id",
    content: joined(lines),
    keys: new Map([["k2", key.publicKeyBase64]]),
    refused: { line: 1, reason: 'unknown key id "k1"' }
  },
  { title: "a broken link", content: brokenLink, refused: { line: 301, reason: "broken link" } },
  {
    title: "a truncated tail cut inside a line",
    content: `${joined(lines.slice(0, 500))}${(lines[500] as string).slice(0, 120)}`,
    refused: { line: 501, reason: "the last line has no line end" }
  },
  {
    title: "a tail truncated at a line end without a checkpoint (accepted: a valid prefix)",
    content: joined(lines.slice(0, 500)),
    checkpoint: { sequence: 500, hash: hashes[499] as string }
  },
  {
    title: "a tail truncated at a line end with the checkpoint of the whole file",
    content: joined(lines.slice(0, 500)),
    after: { sequence: COUNT, hash: hashes[COUNT - 1] as string },
    refused: { line: 0, reason: "ends at sequence 500, before the checkpoint's sequence 700" }
  },
  {
    title: "a checkpoint the file reaches with another hash",
    content: joined(lines),
    after: { sequence: 400, hash: "ab".repeat(32) },
    refused: { line: 400, reason: "the checkpoint says" }
  },
  {
    title: "a file continuing from its checkpoint",
    content: joined(lines.slice(400)),
    after: { sequence: 400, hash: hashes[399] as string },
    checkpoint: { sequence: COUNT, hash: hashes[COUNT - 1] as string }
  },
  {
    title: "a file starting in the middle without a checkpoint",
    content: joined(lines.slice(400)),
    refused: { line: 1, reason: "starts at sequence 401, not 1" }
  },
  {
    title: "a re-serialized entry (same JSON, other key order)",
    content: joined([...lines.slice(0, 49), reserialized, ...lines.slice(50)]),
    refused: { line: 50, reason: "hash does not match the entry's bytes" }
  },
  {
    title: "a re-serialized entry with its hash recomputed",
    content: (() => {
      const envelope = JSON.parse(reserialized) as { entry: string; signature: string }
      const hash = sealEntry(other, envelope.entry).hash
      return joined([...lines.slice(0, 49), JSON.stringify({ ...envelope, hash }), ...lines.slice(50)])
    })(),
    refused: { line: 50, reason: 'signature does not verify with key "k1"' }
  },
  {
    title: "invalid JSON",
    content: joined([...lines.slice(0, 9), '{"entry": "x",', ...lines.slice(10)]),
    refused: { line: 10, reason: "not JSON" }
  },
  {
    title: "a wrongly typed sequence, properly signed",
    content: joined([
      ...lines.slice(0, 9),
      resigned(10, (entry) => ({ ...entry, sequence: "10" })),
      ...lines.slice(10)
    ]),
    refused: { line: 10, reason: "entry: sequence is not an integer" }
  },
  {
    title: "a huge sequence number, properly signed",
    content: joined([
      ...lines.slice(0, 9),
      resigned(10, (entry) => ({ ...entry, sequence: 1e300 })),
      ...lines.slice(10)
    ]),
    refused: { line: 10, reason: "entry: sequence is not an integer" }
  },
  {
    title: "an extra field in the entry, properly signed",
    content: joined([...lines.slice(0, 9), resigned(10, (entry) => ({ ...entry, arguments: {} })), ...lines.slice(10)]),
    refused: { line: 10, reason: "entry: expected exactly the fields" }
  },
  {
    title: "an envelope of other types",
    content: joined([...lines.slice(0, 2), '{"entry":{},"hash":1,"signature":null}', ...lines.slice(3)]),
    refused: { line: 3, reason: "envelope: entry is not a string" }
  },
  {
    title: "a JSON array line",
    content: joined([...lines.slice(0, 2), "[1,2,3]", ...lines.slice(3)]),
    refused: { line: 3, reason: "envelope: expected an object" }
  },
  {
    title: "a byte outside printable ASCII",
    content: joined([...lines.slice(0, 4), `${lines[4]}\u00e9`, ...lines.slice(5)]),
    refused: { line: 5, reason: "outside printable ASCII" }
  },
  {
    title: "an empty line",
    content: joined([...lines.slice(0, 4), "", ...lines.slice(4)]),
    refused: { line: 5, reason: "empty line" }
  },
  {
    title: "a huge line",
    content: joined([...lines.slice(0, 600), "x".repeat(3 * 1024 * 1024), ...lines.slice(600)]),
    refused: { line: 601, reason: "longer than 1048576 bytes" }
  },
  { title: "an empty file", content: "", checkpoint: { sequence: 0, hash: "0".repeat(64) } },
  {
    title: "an emptied file with the checkpoint of the whole one",
    content: "",
    after: { sequence: COUNT, hash: hashes[COUNT - 1] as string },
    refused: { line: 0, reason: "the file holds no entry, but the checkpoint is at sequence" }
  },
  {
    title: "an envelope carrying entry twice (the second one signed)",
    content: joined([
      ...lines.slice(0, 9),
      `{"entry":${JSON.stringify('{"sequence":10}')},${(lines[9] as string).slice(1)}`,
      ...lines.slice(10)
    ]),
    refused: { line: 10, reason: "not written as the gateway writes it" }
  },
  {
    title: "an envelope with its fields in another order",
    content: joined([
      ...lines.slice(0, 19),
      (() => {
        const e = JSON.parse(lines[19] as string) as Record<string, string>
        return JSON.stringify({ hash: e["hash"], entry: e["entry"], signature: e["signature"] })
      })(),
      ...lines.slice(20)
    ]),
    refused: { line: 20, reason: "not written as the gateway writes it" }
  },
  {
    title: "a rotated archive, each key given the sequences it signed",
    content: rotated.content,
    keys: rotatedKeys({ publicKey: key.publicKeyBase64, last: 300 }, { publicKey: other.publicKeyBase64, first: 301 }),
    checkpoint: { sequence: COUNT, hash: rotated.last }
  },
  {
    title: "a tail signed with a retired key past its range (as whoever holds the old key could append)",
    content: joined(lines),
    keys: rotatedKeys({ publicKey: key.publicKeyBase64, last: 300 }, { publicKey: other.publicKeyBase64, first: 301 }),
    refused: { line: 301, reason: 'key "k1" is not valid for sequence 301 (given for 1-300)' }
  },
  {
    title: "a new key's entry before its range",
    content: rotated.content,
    keys: rotatedKeys({ publicKey: key.publicKeyBase64, last: 299 }, { publicKey: other.publicKeyBase64, first: 302 }),
    refused: { line: 300, reason: 'key "k1" is not valid for sequence 300' }
  },
  {
    title: "a range that starts later than the file",
    content: joined(lines.slice(0, 20)),
    keys: new Map([["k1", { publicKey: key.publicKeyBase64, first: 5 }]]),
    refused: { line: 1, reason: 'key "k1" is not valid for sequence 1 (given for 5-)' }
  },
  {
    title: "lines of 900 KB, properly signed",
    content: joined(longLines.lines),
    checkpoint: { sequence: 12, hash: longLines.last }
  }
]

describe("gateway verify-audit", () => {
  for (const testCase of cases) {
    const expected = testCase.refused === undefined ? "accepted" : "refused with its line and reason"
    it(`${testCase.title}: ${expected}, and the independent verifier agrees`, async () => {
      const path = fileOf(testCase.content)
      const verdict = await verifyArchiveFile(path, testCase.keys ?? keys, testCase.after, 2)
      const independent = independentVerify(path, Object.fromEntries(testCase.keys ?? keys), testCase.after)
      if (testCase.refused === undefined) {
        expect(verdict).toEqual({ ok: true, entries: expect.any(Number), checkpoint: testCase.checkpoint })
        expect(independent).toEqual({ ok: true, ...testCase.checkpoint })
      } else {
        expect(verdict).toEqual({ ok: false, line: testCase.refused.line, reason: expect.any(String) })
        if (!verdict.ok) expect(verdict.reason).toContain(testCase.refused.reason)
        expect(independent).toEqual({ ok: false, line: testCase.refused.line })
      }
    })
  }

  it("the executable prints the next checkpoint and exits 0 on a good file, names the line and exits 1 on an edited one", async () => {
    const good = fileOf(joined(lines.slice(0, 20)))
    const accepted = await runGatewayCommand(["verify-audit", "--file", good, "--key", `k1=${key.publicKeyBase64}`])
    expect(accepted.code).toBe(0)
    expect(accepted.stdout).toContain(`${good}: OK, 20 entries verified`)
    expect(accepted.stdout).toContain(`checkpoint: --after-sequence 20 --after-hash ${hashes[19]}`)

    const bad = fileOf(joined([...lines.slice(0, 9), resigned(10, (entry) => ({ ...entry, sequence: 11 }))]))
    const refused = await runGatewayCommand(["verify-audit", "--file", bad, "--key", `k1=${key.publicKeyBase64}`])
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain(`gateway: ${bad}:10: sequence 11 where 10 was expected`)

    // A reason about the whole file names no line before it: `<file>: <reason>`.
    const cut = await runGatewayCommand([
      "verify-audit",
      "--file",
      good,
      "--key",
      `k1=${key.publicKeyBase64}`,
      "--after-sequence",
      "25",
      "--after-hash",
      "ab".repeat(32)
    ])
    expect(cut.code).toBe(1)
    expect(cut.stderr).toBe(
      `gateway: ${good}: the file ends at sequence 20, before the checkpoint's sequence 25: entries were removed from its end (its last line is 20)\n`
    )

    // A file that cannot be read is refused too (exit 1), not a usage error.
    const missing = `${good}.missing`
    const absent = await runGatewayCommand(["verify-audit", "--file", missing, "--key", `k1=${key.publicKeyBase64}`])
    expect(absent.code).toBe(1)
    expect(absent.stderr).toBe(`gateway: ${missing}: not verified: the file does not exist\n`)
  })

  it("a key's range on the command line: a tail past it is refused (exit 1); a bad range is a usage error (exit 2)", async () => {
    const file = fileOf(joined(lines.slice(0, 20)))
    const verify = (keyArgument: string) => runGatewayCommand(["verify-audit", "--file", file, "--key", keyArgument])
    const within = await verify(`k1=${key.publicKeyBase64}@1-20`)
    expect(within.code).toBe(0)
    expect(within.stdout).toContain("OK, 20 entries verified")
    // Leading zeros are the same number, however many.
    expect((await verify(`k1=${key.publicKeyBase64}@00000000000000000001-000020`)).code).toBe(0)
    const past = await verify(`k1=${key.publicKeyBase64}@-10`)
    expect(past.code).toBe(1)
    expect(past.stderr).toContain(`${file}:11: key "k1" is not valid for sequence 11 (given for 1-10)`)
    for (const [range, message] of [
      ["@-", "a range names at least one bound"],
      ["@5-3", "the range's first sequence 5 is after its last 3"],
      ["@0-3", "a range's bounds are integers from 1 to 2^53-1"],
      ["@1-99999999999999999999", "a range's bounds are integers from 1 to 2^53-1"],
      ["@x-3", "--key expects <ID>=<BASE64> or <ID>=<BASE64>@<FIRST>-<LAST>"]
    ] as const) {
      const refused = await verify(`k1=${key.publicKeyBase64}${range}`)
      expect(refused.code, range).toBe(2)
      expect(refused.stdout + refused.stderr, range).toContain(message)
    }
    const twice = await runGatewayCommand([
      "verify-audit",
      "--file",
      file,
      "--key",
      `k1=${key.publicKeyBase64}@1-10`,
      "--key",
      `k1=${key.publicKeyBase64}@1-20`
    ])
    expect(twice.code).toBe(2)
    expect(twice.stdout + twice.stderr).toContain("--key k1 is given twice with different keys or ranges")
  })

  it("a key id holding = and @ (any non-empty key_id) is given to --key as it is, range and all", async () => {
    const id = "ops=2026@q4"
    const file = fileOf(joined(archiveLines(other, id, 3).lines))
    const accepted = await runGatewayCommand([
      "verify-audit",
      "--file",
      file,
      "--key",
      `${id}=${other.publicKeyBase64}@1-3`
    ])
    expect(accepted.code).toBe(0)
    expect(accepted.stdout).toContain("OK, 3 entries verified")
    const past = await runGatewayCommand(["verify-audit", "--file", file, "--key", `${id}=${other.publicKeyBase64}@-2`])
    expect(past.code).toBe(1)
    expect(past.stderr).toContain(`key "${id}" is not valid for sequence 3 (given for 1-2)`)
  })

  it("a malformed --key or a checkpoint given by halves is a usage error (exit 2)", async () => {
    const good = fileOf(joined(lines.slice(0, 2)))
    const badKey = await runGatewayCommand(["verify-audit", "--file", good, "--key", "k1=abc"])
    expect(badKey.code).toBe(2)
    expect(badKey.stdout + badKey.stderr).toContain("--key expects <ID>=<BASE64>")
    const half = await runGatewayCommand([
      "verify-audit",
      "--file",
      good,
      "--key",
      `k1=${key.publicKeyBase64}`,
      "--after-sequence",
      "99999999999999999999"
    ])
    expect(half.code).toBe(2)
    expect(half.stdout + half.stderr).toContain("--after-sequence and --after-hash go together")
  })
})
