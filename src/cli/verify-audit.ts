import { Command, HelpDoc, Options, ValidationError } from "@effect/cli"
import { Console, Data, Effect, Option } from "effect"
import type { Checkpoint } from "../events/archive/chain.js"
import { type VerifyingKey, verifyArchiveFile } from "../events/archive/verify-file.js"

/**
 * `gateway verify-audit --file <jsonl> --key <ID>=<BASE64_PUBLIC_KEY>[@<FIRST>-<LAST>] … [--after-sequence
 * <n> --after-hash <hash>]` (docs/audit-archive.md, "Verifying"; a key's range: "Rotating the key").
 * Exit 0: every line holds, and standard output says the next checkpoint; 1: the file is refused
 * (`<file>:<line>: <reason>` on standard error) or unreadable; 2: a usage error.
 */

export class ArchiveRefused extends Data.TaggedError("ArchiveRefused")<{ readonly message: string }> {}

const usage = (text: string) => Effect.fail(ValidationError.invalidValue(HelpDoc.p(text)))

const hex64 = /^[0-9a-f]{64}$/
// The key is the last `=` and 44 Base64 characters (with its range after it): an id may hold `=` or `@`.
const keyText = /^(.+)=([A-Za-z0-9+/]{43}=)(?:@([0-9]*)-([0-9]*))?$/

/** A bound of a key's range: an integer from 1 to 2^53-1, or undefined when not given. */
const bound = (text: string | undefined): number | undefined | "bad" => {
  if (text === undefined || text === "") return undefined
  const digits = text.replace(/^0+(?=\d)/, "")
  const number = digits.length <= 16 ? Number(digits) : Number.NaN
  return Number.isSafeInteger(number) && number >= 1 ? number : "bad"
}

const keysOption = Options.text("key").pipe(
  Options.atLeast(1),
  Options.withDescription(
    "A key id and its 32-byte Ed25519 public key in Base64, as <ID>=<BASE64>, optionally with the sequences " +
      "it signed, <ID>=<BASE64>@<FIRST>-<LAST> (either bound may be left out; repeatable)"
  ),
  Options.mapEffect((texts) => {
    const keys = new Map<string, VerifyingKey>()
    for (const text of texts) {
      const match = keyText.exec(text)
      if (match === null || Buffer.from(match[2] as string, "base64").length !== 32) {
        return usage(
          "--key expects <ID>=<BASE64> or <ID>=<BASE64>@<FIRST>-<LAST>, where BASE64 is a 32-byte Ed25519 public key (44 characters)"
        )
      }
      const [, id, publicKey, firstText, lastText] = match as unknown as readonly [
        string,
        string,
        string,
        string | undefined,
        string | undefined
      ]
      const first = bound(firstText)
      const last = bound(lastText)
      if (first === "bad" || last === "bad") return usage(`--key ${id}: a range's bounds are integers from 1 to 2^53-1`)
      if (firstText !== undefined && first === undefined && last === undefined) {
        return usage(`--key ${id}: a range names at least one bound (@<FIRST>-, @-<LAST> or @<FIRST>-<LAST>)`)
      }
      if (first !== undefined && last !== undefined && first > last) {
        return usage(`--key ${id}: the range's first sequence ${first} is after its last ${last}`)
      }
      const key: VerifyingKey = {
        publicKey,
        ...(first === undefined ? {} : { first }),
        ...(last === undefined ? {} : { last })
      }
      const known = keys.get(id)
      if (
        known !== undefined &&
        (known.publicKey !== key.publicKey || known.first !== key.first || known.last !== key.last)
      ) {
        return usage(`--key ${id} is given twice with different keys or ranges`)
      }
      keys.set(id, key)
    }
    return Effect.succeed(keys)
  })
)

const checkpointOption = Options.all({
  sequence: Options.text("after-sequence").pipe(
    Options.optional,
    Options.withDescription("The sequence of the checkpoint kept from an earlier run")
  ),
  hash: Options.text("after-hash").pipe(
    Options.optional,
    Options.withDescription("The hash of the checkpoint kept from an earlier run (64 hex digits)")
  )
}).pipe(
  Options.mapEffect(({ sequence, hash }): Effect.Effect<Checkpoint | undefined, ValidationError.ValidationError> => {
    if (Option.isNone(sequence) && Option.isNone(hash)) return Effect.succeed(undefined)
    if (Option.isNone(sequence) || Option.isNone(hash)) {
      return usage("--after-sequence and --after-hash go together: the checkpoint is both")
    }
    const number = /^\d{1,16}$/.test(sequence.value) ? Number(sequence.value) : Number.NaN
    if (!Number.isSafeInteger(number)) return usage("--after-sequence expects an integer from 0 to 2^53-1")
    if (!hex64.test(hash.value)) return usage("--after-hash expects 64 lowercase hex digits")
    return Effect.succeed({ sequence: number, hash: hash.value })
  })
)

/** Why the file could not be read, in words: the system's code, not its message (which repeats the path). */
const unreadable = (error: unknown): string => {
  const code = (error as { code?: unknown }).code
  if (code === "ENOENT") return "the file does not exist"
  if (code === "EACCES" || code === "EPERM") return "the file cannot be read (permission denied)"
  if (code === "EISDIR") return "it is a directory, not a file"
  return error instanceof Error ? error.message : String(error)
}

export const verifyAuditCommand = Command.make(
  "verify-audit",
  {
    // A file that is missing or unreadable is a refused archive (exit 1, docs/operations.md), not a usage error.
    file: Options.file("file").pipe(Options.withDescription("The archive file, one envelope per line")),
    keys: keysOption,
    after: checkpointOption
  },
  ({ file, keys, after }) =>
    Effect.gen(function* () {
      const verified = yield* Effect.tryPromise({
        try: () => verifyArchiveFile(file, keys, after),
        catch: (error) => new ArchiveRefused({ message: `${file}: not verified: ${unreadable(error)}` })
      })
      if (!verified.ok) {
        const where = verified.line > 0 ? `${file}:${verified.line}` : file
        return yield* new ArchiveRefused({ message: `${where}: ${verified.reason}` })
      }
      const { sequence, hash } = verified.checkpoint
      yield* Console.log(`${file}: OK, ${verified.entries} entries verified`)
      yield* Console.log(`checkpoint: --after-sequence ${sequence} --after-hash ${hash}`)
    })
).pipe(
  Command.withDescription("Verify an audit archive file: signatures, hashes and the chain (exit 0 only when all hold)")
)
