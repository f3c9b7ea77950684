import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { makeSealer, SealedSecretError } from "../../src/crypto/sealer.js"
import { randomConfigKey } from "../support/databases.js"

const sealer = makeSealer(randomConfigKey())
const CONTEXT = "signing_key:abc"

const flipLastCharacter = (text: string) => text.slice(0, -1) + (text.endsWith("A") ? "B" : "A")

describe("Sealer", () => {
  it.effect("round-trips text and bytes in the documented format", () =>
    Effect.gen(function* () {
      const sealed = sealer.seal("a secret", CONTEXT)
      expect(sealed).toMatch(/^v1\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]+$/)
      expect(sealed).not.toContain("a secret")
      expect(new TextDecoder().decode(yield* sealer.open(sealed, CONTEXT))).toBe("a secret")
      const bytes = new Uint8Array([0, 1, 2, 255])
      expect(yield* sealer.open(sealer.seal(bytes, CONTEXT), CONTEXT)).toEqual(bytes)
      expect(yield* sealer.open(sealer.seal("", CONTEXT), CONTEXT)).toEqual(new Uint8Array())
    })
  )

  it("seals the same plaintext differently every time", () => {
    expect(sealer.seal("same", CONTEXT)).not.toBe(sealer.seal("same", CONTEXT))
  })

  it.effect("refuses another context, another key, tampering and malformed input", () =>
    Effect.gen(function* () {
      const sealed = sealer.seal("a secret", CONTEXT)
      const [version, nonce, body] = sealed.split(".") as [string, string, string]
      const cases: Array<[string, string, SealedSecretError["reason"]]> = [
        [sealed, "signing_key:other", "authentication failed"],
        [`${version}.${nonce}.${flipLastCharacter(body)}`, CONTEXT, "authentication failed"],
        [`${version}.${flipLastCharacter(nonce)}.${body}`, CONTEXT, "authentication failed"],
        [`v2.${nonce}.${body}`, CONTEXT, "unsupported version"],
        ["v1.abc", CONTEXT, "malformed"],
        [`v1.${nonce}.AAAA`, CONTEXT, "malformed"]
      ]
      for (const [text, context, reason] of cases) {
        const error = yield* Effect.flip(sealer.open(text, context))
        expect(error).toBeInstanceOf(SealedSecretError)
        expect(error.reason).toBe(reason)
        expect(error.message).not.toContain("a secret")
      }
      const other = makeSealer(randomConfigKey())
      expect(Exit.isFailure(yield* Effect.exit(other.open(sealed, CONTEXT)))).toBe(true)
    })
  )
})
